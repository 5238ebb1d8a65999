package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// cloneStore copies src's state and messages into a new memory store.
func cloneStore(t testing.TB, src StreamStore) *memStore {
	t.Helper()
	var st StreamState
	src.FastState(&st)
	dst := newMemStore(StoreLimits{})
	next := uint64(1)
	for seq := st.FirstSeq; seq <= st.LastSeq && st.Msgs > 0; seq++ {
		m, err := src.LoadMsg(seq, nil)
		if err != nil {
			continue
		}
		if seq > next {
			_ = dst.SkipMsgs(seq - next)
		}
		if _, err := dst.StoreMsg(m.Subj, m.Hdr, m.Msg, m.TS); err != nil {
			t.Fatalf("clone: %v", err)
		}
		next = seq + 1
	}
	if st.LastSeq+1 > next {
		_ = dst.SkipMsgs(st.LastSeq + 1 - next)
	}
	return dst
}

// A snapshot directory keeps the state of its point whatever the store
// does after it (appends, removals, erasures, purges, compaction,
// compression, checkpoints), and a store restored from it can erase
// without changing it.
func TestFileStoreSnapshotDir(t *testing.T) {
	variants := []struct {
		name string
		mk   func(t *testing.T) *fsHarness
	}{
		{"os", func(t *testing.T) *fsHarness { return newOSHarness(t, FileStoreConfig{BlockSize: 2048}, StoreLimits{}) }},
		{"mem", func(t *testing.T) *fsHarness {
			return newMemHarness(t, FileStoreConfig{BlockSize: 1024}, StoreLimits{})
		}},
		{"s2", func(t *testing.T) *fsHarness {
			return newMemHarness(t, FileStoreConfig{BlockSize: 4096, Compression: "s2"}, StoreLimits{})
		}},
	}
	type taken struct {
		dir  string
		want *memStore
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 4; seed++ {
				rng := rand.New(rand.NewPCG(seed, 11))
				h := v.mk(t)
				base := filepath.Dir(h.dir)
				model := newMemStore(StoreLimits{})
				var snaps []taken
				for step := 0; step < 600; step++ {
					storeOp(t, rng, h.fs, model, step)
					if rng.IntN(50) != 0 {
						continue
					}
					dir := filepath.Join(base, fmt.Sprintf("snap-%d-%d", seed, step))
					s, err := h.fs.snapshotTo(dir)
					if err != nil {
						t.Fatalf("seed %d step %d: snapshot: %v", seed, step, err)
					}
					if err := s.write(); err != nil {
						t.Fatalf("seed %d step %d: writing snapshot: %v", seed, step, err)
					}
					snaps = append(snaps, taken{dir, cloneStore(t, model)})
				}
				if len(snaps) == 0 {
					t.Fatalf("seed %d took no snapshot", seed)
				}
				h.fs.Sync()
				for i, sn := range snaps {
					what := fmt.Sprintf("seed %d snapshot %s", seed, filepath.Base(sn.dir))
					restored := restoreForTest(t, h, sn.dir, fmt.Sprintf("restored-%d-%d", seed, i))
					compareStores(t, restored, sn.want, what)
					// Erase every other live message of the restored store:
					// the snapshot must not change.
					var st StreamState
					restored.FastState(&st)
					for seq := st.FirstSeq; seq <= st.LastSeq; seq += 2 {
						restored.EraseMsg(seq)
					}
					restored.Stop()
					again := restoreForTest(t, h, sn.dir, fmt.Sprintf("again-%d-%d", seed, i))
					compareStores(t, again, sn.want, what+" after erasures in a store restored from it")
					again.Stop()
				}
				h.fs.Stop()
			}
		})
	}
}

func restoreForTest(t *testing.T, h *fsHarness, snapDir, name string) *fileStore {
	t.Helper()
	dir := filepath.Join(filepath.Dir(h.dir), name)
	if err := restoreFileSnapshot(h.fsys, snapDir, dir); err != nil {
		t.Fatalf("restore %s: %v", snapDir, err)
	}
	var logs logSink
	cfg := h.cfg
	cfg.Logf = logs.logf
	fs := mustOpenFileStore(t, h.fsys, dir, cfg, StoreLimits{})
	fs.markShared()
	if l := logs.take(); len(l) > 0 { // e.g. a checkpoint not taken
		t.Fatalf("restoring %s: %v", snapDir, l)
	}
	return fs
}

// An erase that fails to rewrite a shared block leaves it shared: the next
// erase must not write over the snapshot's file in place.
func TestFileStoreSnapshotEraseRewriteFails(t *testing.T) {
	h := newMemHarness(t, FileStoreConfig{BlockSize: 1024}, StoreLimits{})
	for i := 0; i < 60; i++ {
		if _, err := h.fs.StoreMsg(fmt.Sprintf("s.%d", i%3), nil, []byte(fmt.Sprintf("payload %02d", i)), int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	snapDir := "/data/snap"
	s, err := h.fs.snapshotTo(snapDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.write(); err != nil {
		t.Fatal(err)
	}
	want := cloneStore(t, h.fs)
	h.mem.InjectError(func(op, name string) error {
		if op == "write" && strings.HasSuffix(name, ".blk.tmp") {
			return errors.New("disk full")
		}
		return nil
	})
	if _, err := h.fs.EraseMsg(2); err == nil {
		t.Fatal("the erase's rewrite was to fail")
	}
	h.mem.InjectError(nil)
	if ok, err := h.fs.EraseMsg(3); !ok || err != nil {
		t.Fatalf("erase 3: %v %v", ok, err)
	}
	restored := restoreForTest(t, h, snapDir, "restored")
	compareStores(t, restored, want, "snapshot after a failed and a good erase")
	restored.Stop()
}

// A store that once listed a lost message still expands its snapshots:
// only messages lost while expanding make the expansion fail.
func TestExpandSnapshotWithEarlierLoss(t *testing.T) {
	groupDir := t.TempDir()
	fs := mustOpenFileStore(t, vfs.Default, filepath.Join(t.TempDir(), "msgs"), FileStoreConfig{BlockSize: 2048}, StoreLimits{})
	defer fs.Stop()
	for i := 0; i < 100; i++ {
		if _, err := fs.StoreMsg(fmt.Sprintf("s.%d", i%7), nil, []byte(fmt.Sprintf("payload %d", i)), int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	fs.mu.Lock()
	fs.loseSeq(fs.findBlock(1), 1)
	fs.mu.Unlock()
	if lostCount(fs) == 0 {
		t.Fatal("no loss recorded")
	}
	s, err := fs.snapshotTo(filepath.Join(groupDir, snapsDir, "100"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.write(); err != nil {
		t.Fatal(err)
	}
	var st StreamState
	fs.FastState(&st)
	meta := streamSnapMeta{First: st.FirstSeq, Last: st.LastSeq, Messages: st.Msgs, Linked: "100"}
	mj, _ := json.Marshal(&meta)
	mset := &stream{groupDir: groupDir}
	full, err := expandForTest(mset, appendBytes(appendBytes(nil, []byte(linkedSnapTag)), mj))
	if err != nil {
		t.Fatalf("expanding: %v", err)
	}
	got, rest, err := decodeSnapMeta(full)
	if err != nil || got.Linked != "" || got.Messages != st.Msgs {
		t.Fatalf("expanded metadata %+v %v", got, err)
	}
	if msgs := snapMsgs(t, rest.b); uint64(len(msgs)) != st.Msgs {
		t.Fatalf("%d messages expanded, want %d", len(msgs), st.Msgs)
	}
}

// expandForTest expands a linked snapshot and reads the file it went to.
func expandForTest(mset *stream, data []byte) ([]byte, error) {
	f, size, err := mset.expandSnapshot(data)
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
	if !bytes.Equal(mem, streamed.Bytes()) {
		t.Fatalf("streamed snapshot (%d bytes) differs from the in-memory one (%d bytes)", streamed.Len(), len(mem))
	}
}
