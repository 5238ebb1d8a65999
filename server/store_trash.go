package server

import (
	"fmt"
	"path/filepath"
	"sync/atomic"
)

// Discarded store directories. A replicated stream's store is rebuilt
// from its raft log at every start, so the replica first discards the
// directory it had. Removing it in place took most of a restart with
// thousands of streams: each removal unlinks a few files and directories
// one after another, on the 8 start workers (startReplicas), which a
// goroutine dump of a server restarting with 10,000 streams found in
// RemoveAll 6 times out of 8. The directory is renamed into
// <store_dir>/_trash_ instead (one operation) and one background
// goroutine removes what the trash holds; a start also empties whatever
// an earlier run left there. A directory that cannot be moved is
// removed in place, as before.

const trashDirName = "_trash_"

// storeTrash is the state of the trash goroutine (no lock: pending and
// running hand the work over without losing a wake-up).
type storeTrash struct {
	seq     atomic.Uint64
	pending atomic.Int64 // discards since the goroutine last listed the trash
	running atomic.Bool
}

func (js *jetStream) trashDir() string { return filepath.Join(js.storeDir, trashDirName) }

// discardDir moves dir, if it exists, into the trash for the background
// goroutine to remove.
func (js *jetStream) discardDir(dir string) {
	if _, err := js.fs.Stat(dir); err != nil {
		return // nothing there: a new stream
	}
	name := fmt.Sprintf("%d-%d", js.srv.clock.Now().UnixNano(), js.trash.seq.Add(1))
	if js.fs.MkdirAll(js.trashDir(), 0o750) != nil || js.fs.Rename(dir, filepath.Join(js.trashDir(), name)) != nil {
		js.fs.RemoveAll(dir)
		return
	}
	js.emptyTrash()
}

// emptyTrash has the trash emptied: it starts the goroutine unless it is
// running, which then lists the trash again.
func (js *jetStream) emptyTrash() {
	t := &js.trash
	t.pending.Add(1)
	if !t.running.CompareAndSwap(false, true) {
		return
	}
	s := js.srv
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		js.emptyTrashLoop()
	}()
}

// emptyTrashLoop removes what the trash holds until no discard is
// pending; it stops early when the server shuts down (the next start
// removes the rest).
func (js *jetStream) emptyTrashLoop() {
	t := &js.trash
	for {
		if t.pending.Swap(0) == 0 {
			t.running.Store(false)
			// A discard between the Swap and the Store found the goroutine
			// running and left its wake-up in pending: take it over.
			if t.pending.Load() == 0 || !t.running.CompareAndSwap(false, true) {
				return
			}
			continue
		}
		ents, _ := js.fs.ReadDir(js.trashDir())
		for _, e := range ents {
			select {
			case <-js.srv.quit:
				t.running.Store(false)
				return
			default:
			}
			js.fs.RemoveAll(filepath.Join(js.trashDir(), e.Name()))
		}
	}
}
