package wal

import (
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/testutil"
	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// openIn counts this process's descriptors open on files under dir.
func openIn(t *testing.T, dir string) int {
	t.Helper()
	return testutil.OpenFiles(t, func(p string) bool { return strings.HasPrefix(p, dir) })
}

// Release closes every segment file of a log with nothing left to write
// or sync, and reads, appends and syncs after it open what they need:
// an idle raft group holds no descriptor. A log with unsynced data keeps
// its files.
func TestWALReleaseClosesIdleFiles(t *testing.T) {
	dir := t.TempDir()
	w := mustOpen(t, vfs.Default, dir, Options{SegmentSize: 2048})
	defer w.Close()
	for i := uint64(1); i <= 200; i += 10 {
		mustAppend(t, w, batch(i, i+9, 1))
	}
	if w.Release() {
		t.Fatal("Release closed the files of a log with unsynced entries")
	}
	mustSync(t, w)
	if n := openIn(t, dir); n < 2 {
		t.Fatalf("%d files open before Release, want the segments", n)
	}
	if !w.Release() {
		t.Fatal("Release kept the files of a synced log")
	}
	if n := openIn(t, dir); n != 0 {
		t.Fatalf("%d files still open after Release", n)
	}
	w.cache.reset(w.LastIndex() + 1) // reads must come from the files
	checkLog(t, w, 1, 200, term1)
	mustAppend(t, w, batch(201, 260, 1))
	mustSync(t, w)
	checkLog(t, w, 1, 260, term1)
	// A hard state set since the last Sync is held in memory: the files
	// may close, and the next Sync opens the active one to record it.
	if err := w.SetHardState(HardState{Term: 1, Commit: 250}); err != nil {
		t.Fatal(err)
	}
	if !w.Release() {
		t.Fatal("Release refused with only a hard state pending")
	}
	mustSync(t, w)
	if !w.Release() {
		t.Fatal("second Release refused")
	}
	if err := w.Compact(100); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w = mustOpen(t, vfs.Default, dir, Options{SegmentSize: 2048})
	checkLog(t, w, w.FirstIndex(), 260, term1)
	if hs := w.HardState(); hs.Term != 1 || hs.Commit != 250 {
		t.Fatalf("hard state after the reopen: %+v", hs)
	}
}
