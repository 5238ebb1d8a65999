package wal

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// An append, a read and the hard state go on while a Sync's fsync runs
// (it runs without the log's lock): a raft leader writes its next batch
// while the last one syncs. What was appended meanwhile is durable after
// the next Sync, not that one. (Before, Append waited for the fsync.)
func TestAppendDuringSync(t *testing.T) {
	fs := vfs.NewMem()
	w := mustOpen(t, fs, memDir, Options{})
	rec := func(i uint64) Record { return Record{Index: i, Term: 1, Data: payload(i, 1)} }
	if err := w.Append([]Record{rec(1)}); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil { // the new segment's directory too
		t.Fatal(err)
	}
	if err := w.Append([]Record{rec(2)}); err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	blocked := false
	fs.InjectError(func(op, _ string) error {
		if op == "sync" && !blocked { // the file system's lock is held
			blocked = true
			close(entered)
			<-release
		}
		return nil
	})
	synced := make(chan error, 1)
	go func() { synced <- w.Sync() }()
	<-entered
	appended := make(chan error, 1)
	go func() {
		err := w.Append([]Record{rec(3)})
		if err == nil {
			_, err = w.Entries(1, 4, 1<<20)
		}
		if err == nil {
			err = w.SetHardState(HardState{Term: 1, Commit: 2})
		}
		appended <- err
	}()
	select {
	case err := <-appended:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("Append waited for the fsync of an earlier Sync")
	}
	if !w.Dirty() {
		t.Fatal("Dirty is false while a sync runs")
	}
	close(release)
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	if !w.Dirty() {
		t.Fatal("the record appended during the sync is not dirty")
	}
	fs.Crash()
	w2 := mustOpen(t, fs, memDir, Options{})
	if last := w2.LastIndex(); last != 2 {
		t.Fatalf("after a crash: last index %d, want 2 (the sync covered 1 and 2)", last)
	}
}
