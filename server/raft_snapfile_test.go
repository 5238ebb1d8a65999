package server

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats-server/v2/internal/vfs"
	"github.com/nats-io/nats.go/jetstream"
)

// A raft snapshot file is checked on load (issue 19): a flipped bit, a cut
// or a lost trailer is errSnapshotCorrupt, for full data, for a spooled
// reference (a large file, read through once) and for a stream's linked
// snapshot; an intact one reads back the same.
func TestWALLogSnapshotFileChecksum(t *testing.T) {
	setForTest(t, &spooledMin, 2000)
	damages := map[string]func(b []byte) []byte{
		"bitflip":  func(b []byte) []byte { b[len(b)/2] ^= 4; return b },
		"head":     func(b []byte) []byte { b[snapMarkerLen] ^= 1; return b },
		"truncate": func(b []byte) []byte { return b[:len(b)*2/3] },
		"trailer":  func(b []byte) []byte { return b[:len(b)-snapTrailerLen] },
		"marker":   func(b []byte) []byte { b[0] ^= 0x40; return b },
		"tag":      func(b []byte) []byte { b[len(b)-1] ^= 1; return b },
		"empty":    func(b []byte) []byte { return nil },
	}
	snaps := map[string]raft.Snapshot{
		"full":    {Index: 9, Term: 2, Peers: []raft.ID{1, 2, 3}, Data: []byte("{" + strings.Repeat("x", 500) + "}")},
		"spooled": {Index: 9, Term: 2, Peers: []raft.ID{1, 2, 3}, Data: []byte("{" + strings.Repeat("y", 5000) + "}")},
		"linked":  {Index: 9, Term: 2, Peers: []raft.ID{1, 2, 3}, Local: newLinkedSnap(streamSnapMeta{LastID: "abc", Linked: "9"})},
	}
	for kind, snap := range snaps {
		dir := t.TempDir()
		l, err := openWALLogKind(vfs.Default, dir, 0, t.Logf, linkedSnapKind{})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.storeSnapshot(snap); err != nil {
			t.Fatal(err)
		}
		l.Close()
		name := filepath.Join(dir, snapshotFile)
		good, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		l, err = openWALLogKind(vfs.Default, dir, 0, t.Logf, linkedSnapKind{})
		if err != nil {
			t.Fatalf("%s: intact file refused: %v", kind, err)
		}
		got, err := l.Snapshot()
		if err != nil || got.Index != 9 || len(got.Peers) != 3 {
			t.Fatalf("%s: read back %+v, %v", kind, got, err)
		}
		raw, err := snapshotBytes(vfs.Default, got)
		want, _ := snapshotBytes(vfs.Default, snap)
		if err != nil || !bytes.Equal(raw, want) {
			t.Fatalf("%s: data read back differs (%d bytes, want %d): %v", kind, len(raw), len(want), err)
		}
		l.Close()
		for what, damage := range damages {
			if err := os.WriteFile(name, damage(bytes.Clone(good)), 0o640); err != nil {
				t.Fatal(err)
			}
			if l, err := openWALLogKind(vfs.Default, dir, 0, t.Logf, linkedSnapKind{}); !errors.Is(err, errSnapshotCorrupt) {
				if l != nil {
					l.Close()
				}
				t.Fatalf("%s %s: open gave %v, want errSnapshotCorrupt", kind, what, err)
			}
		}
	}
}

// A snapshot file written before the checksum existed (no marker, no
// trailer) is read as before: an upgraded server keeps its snapshots.
func TestWALLogReadsSnapshotFileWithoutChecksum(t *testing.T) {
	setForTest(t, &spooledMin, 2000)
	for _, size := range []int{100, 5000} {
		dir := t.TempDir()
		data := []byte("{" + strings.Repeat("z", size) + "}")
		old := []byte{9, 2, 3, 1, 2, 3} // index 9, term 2, peers 1 2 3
		if err := os.WriteFile(filepath.Join(dir, snapshotFile), append(old, data...), 0o640); err != nil {
			t.Fatal(err)
		}
		l, err := openWALLogKind(vfs.Default, dir, 0, t.Logf, linkedSnapKind{})
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		snap, err := l.Snapshot()
		got, gerr := snapshotBytes(vfs.Default, snap)
		l.Close()
		if err != nil || gerr != nil || snap.Index != 9 || snap.Term != 2 || len(snap.Peers) != 3 || !bytes.Equal(got, data) {
			t.Fatalf("size %d: read back %d/%d %v, %d bytes: %v %v", size, snap.Index, snap.Term, snap.Peers, len(got), err, gerr)
		}
	}
}

// A replica whose raft snapshot file is damaged while it is stopped
// discards its state at start and catches up from the other replicas; the
// stream keeps every message everywhere. A memory stream's snapshot file
// holds the full state (every message): a flipped bit in a payload would
// otherwise come back as a wrong message on that replica.
func TestJetStreamClusterRepairSnapshotFile(t *testing.T) {
	for _, storage := range []jetstream.StorageType{jetstream.FileStorage, jetstream.MemoryStorage} {
		t.Run(storage.String(), func(t *testing.T) {
			setForTest(t, &repairStorage, storage)
			testRepair(t, damageSnapshotFile)
		})
	}
}

func damageSnapshotFile(t *testing.T, dir string, _ repairFile) {
	{
		var files []string
		filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() && fi.Name() == snapshotFile && strings.Contains(p, "_raft_") && !strings.Contains(p, "_meta_") {
				files = append(files, p)
			}
			return nil
		})
		if len(files) != 1 {
			t.Fatalf("stream raft snapshot files under %s: %v", dir, files)
		}
		b, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0x20
		writeInPlace(t, files[0], b)
	}
}
