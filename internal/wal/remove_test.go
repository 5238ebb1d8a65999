package wal

import (
	"testing"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// TestWALSharesItsDirectory: a log in a directory holding files of other
// names (a raft group's snapshot and records) ignores them, and Remove
// removes its segments only, durably: after a power loss the directory
// opens as an empty log and the other files are still there.
func TestWALSharesItsDirectory(t *testing.T) {
	fs := vfs.NewMem()
	if err := vfs.MkdirAllSynced(fs, memDir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := vfs.WriteFileSynced(fs, memDir+"/snapshot", []byte("s")); err != nil {
		t.Fatal(err)
	}
	w := mustOpen(t, fs, memDir, Options{SegmentSize: 256})
	for i := uint64(1); i <= 20; i++ {
		if err := w.Append([]Record{{Index: i, Term: 1, Data: make([]byte, 40)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	w = mustOpen(t, fs, memDir, Options{SegmentSize: 256})
	if w.LastIndex() != 20 {
		t.Fatalf("reopened beside another file: last index %d, want 20", w.LastIndex())
	}
	w.Close()
	if !IsSegment(segName(3, 7)) || IsSegment("snapshot") || IsSegment("incarnation-5") {
		t.Fatal("IsSegment misjudges a name")
	}
	if err := Remove(fs, memDir); err != nil {
		t.Fatal(err)
	}
	fs.Crash()
	ents, err := fs.ReadDir(memDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != "snapshot" {
		t.Fatalf("after Remove and a power loss the directory holds %d entries, want the snapshot only", len(ents))
	}
	if err := Remove(fs, "/nowhere"); err != nil {
		t.Fatalf("removing the log of a missing directory: %v", err)
	}
}
