package server

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// A linked snapshot expands into the full form holding every message.
func TestExpandLinkedSnapshot(t *testing.T) {
	groupDir := t.TempDir()
	fs := mustOpenFileStore(t, vfs.Default, filepath.Join(t.TempDir(), "msgs"), FileStoreConfig{BlockSize: 2048}, StoreLimits{})
	defer fs.Stop()
	for i := 0; i < 100; i++ {
		if _, err := fs.StoreMsg(fmt.Sprintf("s.%d", i%7), nil, []byte(fmt.Sprintf("payload %d", i)), int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := fs.RemoveMsg(3); err != nil {
		t.Fatal(err)
	}
	s, err := fs.(linkableStore).SnapshotTo(filepath.Join(groupDir, snapsDir, "100"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(); err != nil {
		t.Fatal(err)
	}
	var st StreamState
	fs.FastState(&st)
	meta := streamSnapMeta{First: st.FirstSeq, Last: st.LastSeq, Messages: st.Msgs, Linked: "100"}
	mset := &stream{groupDir: groupDir, jsa: &jsAccount{js: &jetStream{fs: vfs.Default}}}
	full, err := expandForTest(mset, newLinkedSnap(meta))
	if err != nil {
		t.Fatalf("expanding: %v", err)
	}
	got, rest, err := decodeFullSnap(full)
	if err != nil || got.Linked != "" || got.Messages != st.Msgs {
		t.Fatalf("expanded metadata %+v %v", got, err)
	}
	if msgs := snapMsgs(t, rest.b); uint64(len(msgs)) != st.Msgs {
		t.Fatalf("%d messages expanded, want %d", len(msgs), st.Msgs)
	}
}

// expandForTest expands a linked snapshot and reads the file it went to.
func expandForTest(mset *stream, l linkedSnap) ([]byte, error) {
	f, size, err := mset.expandSnapshot(l)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	full := make([]byte, size)
	_, err = f.ReadAt(full, 0)
	return full, err
}

// A full snapshot written to a file a batch at a time (as a linked one is
// expanded to be sent) is byte for byte the one encoded in memory.
func TestWriteFullSnapshotMatchesInMemory(t *testing.T) {
	fs := mustOpenFileStore(t, vfs.Default, t.TempDir(), FileStoreConfig{BlockSize: 256 << 10}, StoreLimits{})
	payload := bytes.Repeat([]byte("x"), 200)
	for i := range 12000 { // about 3 MiB: several flushes
		if _, err := fs.StoreMsg(fmt.Sprintf("w.%d", i%97), nil, payload, int64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	for seq := uint64(5); seq < 12000; seq += 7 {
		if _, err := fs.RemoveMsg(seq); err != nil {
			t.Fatal(err)
		}
	}
	var st StreamState
	fs.FastState(&st)
	meta := streamSnapMeta{First: st.FirstSeq, Last: st.LastSeq, Messages: st.Msgs}
	mem, err := fullSnapshot(fs, &meta, st)()
	if err != nil {
		t.Fatal(err)
	}
	var streamed bytes.Buffer
	if err := writeFullSnapshot(fs, &meta, st, &streamed); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mem.data, streamed.Bytes()) {
		t.Fatalf("streamed snapshot (%d bytes) differs from the in-memory one (%d bytes)", streamed.Len(), len(mem.data))
	}
}
