package server

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nats-io/nats-server/v2/internal/lockorder"
	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// A replica's store is rebuilt from its raft log at every start, so what
// its directory held is discarded. Deleting it there (RemoveAll: an unlink
// per file, a rmdir per directory, each a journal update) was most of a
// restart's time with thousands of streams: at 2,000 streams the eight
// workers starting replicas spent 70% of their time in it, 18 ms per
// stream on a busy disk. Instead each entry of the directory is renamed
// aside (one rename, `.old-<n>` in the same directory) and a goroutine
// deletes what was renamed, one directory after another, behind the
// restart. Only names it made are deleted, never a store in use; what a
// stop leaves behind is found and queued when the replica starts again.

// discardPrefix starts the names of entries set aside; a stream's own
// entries (msgs, msgs.<n>) never start with a dot.
const discardPrefix = ".old-"

// discardQueueMax bounds the paths waiting; past it a replica deletes
// its old entries itself, as before.
const discardQueueMax = 1 << 16

// storeDiscard deletes set-aside store entries on a goroutine of its own
// (run), started with clustered JetStream and stopped by its shutdown.
type storeDiscard struct {
	mu      lockorder.Mutex[lockorder.StoreDiscard]
	fs      vfs.FS
	paths   []string      // waiting, oldest first
	stopped bool          // stopDiscard ran: nothing more is queued
	kick    chan struct{} // paths were queued (one pending kick is enough)
	stop    chan struct{} // closed by stopDiscard
	done    chan struct{} // closed when run returns
}

func newStoreDiscard(fs vfs.FS) *storeDiscard {
	return &storeDiscard{fs: fs, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// emptyStoreDir empties a replica's directory for a store rebuilt from
// scratch: in the background when the server runs the discard goroutine,
// at once under a raft host (the simulator: no goroutine of its own may
// touch its file system).
func (js *jetStream) emptyStoreDir(dir string) {
	if js.discard == nil {
		js.fs.RemoveAll(dir)
		return
	}
	js.discard.setAside(dir)
}

// setAside empties dir for a store rebuilt from scratch: it renames each
// of its entries aside and queues them for deletion (entries set aside
// before are queued as they are). An entry it cannot rename or queue is
// deleted at once. dir need not exist.
func (d *storeDiscard) setAside(dir string) {
	ents, err := d.fs.ReadDir(dir)
	if err != nil {
		return // none yet (or unreadable: the store's open reports it)
	}
	taken := make(map[string]bool, len(ents))
	for _, e := range ents {
		taken[e.Name()] = true
	}
	n := 0
	var queue []string
	for _, e := range ents {
		path := filepath.Join(dir, e.Name())
		if strings.HasPrefix(e.Name(), discardPrefix) {
			queue = append(queue, path)
			continue
		}
		name := ""
		for name == "" || taken[name] {
			n++
			name = discardPrefix + strconv.Itoa(n)
		}
		taken[name] = true
		aside := filepath.Join(dir, name)
		if d.fs.Rename(path, aside) != nil {
			d.fs.RemoveAll(path)
			continue
		}
		queue = append(queue, aside)
	}
	for _, p := range queue {
		if !d.push(p) {
			d.fs.RemoveAll(p)
		}
	}
}

// push queues path unless the queue is full or the goroutine stopped.
func (d *storeDiscard) push(path string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped || len(d.paths) >= discardQueueMax {
		return false
	}
	d.paths = append(d.paths, path)
	select {
	case d.kick <- struct{}{}:
	default:
	}
	return true
}

// pop takes the oldest path waiting.
func (d *storeDiscard) pop() (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.paths) == 0 {
		if cap(d.paths) > 64 {
			d.paths = nil // an idle server keeps no restart-sized slice
		}
		return "", false
	}
	p := d.paths[0]
	d.paths[0] = ""
	d.paths = d.paths[1:]
	return p, true
}

// run deletes what is queued until stopped (or the server quits); what is
// left stays on disk until the replica starts again.
func (d *storeDiscard) run(quit <-chan struct{}) {
	defer close(d.done)
	for {
		for {
			p, ok := d.pop()
			if !ok {
				break
			}
			d.fs.RemoveAll(p)
			select {
			case <-d.stop:
				return
			case <-quit:
				return
			default:
			}
		}
		select {
		case <-d.kick:
		case <-d.stop:
			return
		case <-quit:
			return
		}
	}
}

// start runs the goroutine (Server.wg counts it).
func (js *jetStream) startDiscard() {
	d := js.discard
	js.srv.wg.Add(1)
	go func() {
		defer js.srv.wg.Done()
		d.run(js.srv.quit)
	}()
}

// stopDiscard ends the goroutine and waits for it; paths queued later are
// deleted by whoever queues them.
func (js *jetStream) stopDiscard() {
	d := js.discard
	if d == nil {
		return
	}
	d.mu.Lock()
	was := d.stopped
	d.stopped = true
	d.mu.Unlock()
	if !was {
		close(d.stop)
		<-d.done
	}
}
