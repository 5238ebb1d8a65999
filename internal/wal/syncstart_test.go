package wal

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// SyncStart's fsync, run later without the lock, makes durable what was
// appended before SyncStart (across segment rollovers), while appends go
// on meanwhile; until it ran, Dirty is true, Release holds off and Sync
// waits for it.
func TestWALSyncStart(t *testing.T) {
	fs := vfs.NewMem()
	opts := Options{SegmentSize: 4096}
	w := mustOpen(t, fs, memDir, opts)
	var synced uint64
	ran := false
	for i := uint64(1); i <= 500; i += 25 {
		mustAppend(t, w, batch(i, i+24, 1))
		fsync, err := w.SyncStart()
		if err != nil {
			t.Fatal(err)
		}
		if i < 300 || w.syncing == 0 { // 0: a rollover's directory sync made it all in place
			if err := fsync(); err != nil {
				t.Fatal(err)
			}
			synced = i + 24
			continue
		}
		// Left running: appends go on, the log stays dirty and open.
		mustAppend(t, w, batch(i+25, i+49, 1))
		if !w.Dirty() {
			t.Fatal("Dirty is false with an fsync not run")
		}
		if w.Release() {
			t.Fatal("Release closed the files with an fsync not run")
		}
		done := make(chan error, 1)
		go func() { done <- w.Sync() }()
		select {
		case err := <-done:
			t.Fatalf("Sync returned (%v) before the fsync begun by SyncStart ran", err)
		case <-time.After(50 * time.Millisecond):
		}
		if err := fsync(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		synced, ran = i+49, true
		break
	}
	if !ran {
		t.Fatal("no fsync was left running")
	}
	fs.Crash()
	w = mustOpen(t, fs, memDir, opts)
	last := w.LastIndex()
	if last < synced {
		t.Fatalf("after crash the log ends at %d, synced up to %d", last, synced)
	}
	checkLog(t, w, 1, last, term1)
	w.Close()
}
