package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/vfs"
	"github.com/nats-io/nats.go/jetstream"
)

// holdFS is the OS file system whose RemoveAll of anything under root
// waits until release is closed (while hold is set), and which records
// those calls.
type holdFS struct {
	vfs.FS
	root    string
	release chan struct{}
	mu      sync.Mutex
	hold    bool
	removed []string
}

func (h *holdFS) RemoveAll(name string) error {
	h.mu.Lock()
	hold := h.hold && strings.HasPrefix(name, h.root)
	if strings.HasPrefix(name, h.root) {
		h.removed = append(h.removed, name)
	}
	h.mu.Unlock()
	if hold {
		<-h.release
	}
	return h.FS.RemoveAll(name)
}

// A restarted server's replicas rebuild their stores from their logs
// without waiting for the old stores' files to be deleted: the old entries
// are renamed aside and deleted behind the restart. With every deletion
// under the streams' directory held, the restarted server still becomes
// current in every stream with every message; once deletions go on, no
// set-aside entry is left and each store directory holds its new store.
func TestJetStreamClusterRestartSetsOldStoresAside(t *testing.T) {
	const n = 4
	hfs := &holdFS{FS: vfs.Default, release: make(chan struct{})}
	c := runJSClusterWith(t, 3, func(i int, o *Options) {
		if i == 2 {
			o.fsys = hfs
			hfs.root = filepath.Join(o.StoreDir, "jetstream", globalAccountName, "streams")
		}
	})
	_, js := jsClient(t, c.servers[0])
	var names []string
	for i := range n {
		name := fmt.Sprintf("AS%d", i)
		names = append(names, name)
		createStream(t, js, jetstream.StreamConfig{Name: name, Subjects: []string{name}, Replicas: 3, Storage: jetstream.FileStorage})
		for range 3 {
			if _, err := js.Publish(ctx(t), name, []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
	}
	stored := func(s *Server, name string) uint64 {
		jsa := s.js.Load().account(globalAccountName)
		if jsa == nil {
			return 0
		}
		mset := jsa.lookup(name)
		if mset == nil || mset.st() == nil {
			return 0
		}
		return mset.st().State().Msgs
	}
	waitFor(t, 15*time.Second, "every message on the third server", func() bool {
		for _, name := range names {
			if stored(c.servers[2], name) != 3 {
				return false
			}
		}
		return true
	})
	c.servers[2].Shutdown()
	hfs.mu.Lock()
	hfs.hold, hfs.removed = true, nil
	hfs.mu.Unlock()
	released := false
	release := func() {
		if !released {
			released = true
			hfs.mu.Lock()
			hfs.hold = false
			hfs.mu.Unlock()
			close(hfs.release)
		}
	}
	c.servers[2] = runServer(t, c.opts[2])
	t.Cleanup(release) // before the server's shutdown (cleanups run last first)
	waitFor(t, 30*time.Second, "every store rebuilt while deletions are held", func() bool {
		for _, name := range names {
			if stored(c.servers[2], name) != 3 {
				return false
			}
		}
		return true
	})
	release()
	waitFor(t, 15*time.Second, "the set-aside entries deleted", func() bool {
		for _, name := range names {
			ents, err := os.ReadDir(filepath.Join(hfs.root, name))
			if err != nil {
				return false
			}
			for _, e := range ents {
				if e.Name() != "msgs" {
					return false
				}
			}
		}
		return true
	})
	hfs.mu.Lock()
	defer hfs.mu.Unlock()
	for _, p := range hfs.removed {
		if !strings.Contains(filepath.Base(p), discardPrefix) {
			t.Fatalf("a restart deleted %s itself", p)
		}
	}
	if len(hfs.removed) < n {
		t.Fatalf("%d deletions for %d old stores: %v", len(hfs.removed), n, hfs.removed)
	}
}

// setAside renames each entry aside under a name not taken, queues the
// entries set aside before as they are, and leaves the directory in place;
// run deletes what is queued.
func TestStoreDiscardSetAside(t *testing.T) {
	fs := vfs.Default // renames directories (vfs.MemFS renames files only)
	dir := filepath.Join(t.TempDir(), "S")
	for _, f := range []string{"msgs/1.blk", "msgs.2/1.blk", ".old-1/msgs/1.blk"} {
		p := filepath.Join(dir, f)
		if err := fs.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			t.Fatal(err)
		}
		fh, err := fs.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o640)
		if err != nil {
			t.Fatal(err)
		}
		fh.Close()
	}
	d := newStoreDiscard(fs)
	d.setAside(dir)
	d.mu.Lock()
	got := strings.Join(d.paths, " ")
	d.mu.Unlock()
	for _, want := range []string{".old-1", ".old-2", ".old-3"} {
		if !strings.Contains(got, filepath.Join(dir, want)) {
			t.Fatalf("queued %q, want %s among them", got, want)
		}
	}
	ents, _ := fs.ReadDir(dir)
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), discardPrefix) {
			t.Fatalf("%s left in place", e.Name())
		}
	}
	quit := make(chan struct{})
	go d.run(quit)
	waitFor(t, 10*time.Second, "the queue deleted", func() bool {
		ents, err := fs.ReadDir(dir)
		return err == nil && len(ents) == 0
	})
	close(d.stop)
	<-d.done
}
