package server

import (
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/vfs"
	"github.com/nats-io/nats.go/jetstream"
)

// storePanicFS panics once, when armed, in a write to a file whose path
// contains match: a bug in a stream store's write path.
type storePanicFS struct {
	vfs.FS
	match string
	armed atomic.Bool
	fired atomic.Bool
}

func (f *storePanicFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.Contains(name, f.match) {
		return file, err
	}
	return &storePanicFile{File: file, fs: f}, nil
}

type storePanicFile struct {
	vfs.File
	fs *storePanicFS
}

func (h *storePanicFile) fire() {
	if h.fs.armed.Load() && h.fs.fired.CompareAndSwap(false, true) {
		panic("test: store write path bug")
	}
}

func (h *storePanicFile) WriteAt(b []byte, off int64) (int, error) {
	h.fire()
	return h.File.WriteAt(b, off)
}

func (h *storePanicFile) Write(b []byte) (int, error) {
	h.fire()
	return h.File.Write(b)
}

// TestJetStreamStorePanicAtShutdown: a panic in a file stream's store
// write while Shutdown stops the stream (its final sync and checkpoint)
// ended the whole process. Now the panic is logged, the stream's stop goes
// on and Shutdown returns.
func TestJetStreamStorePanicAtShutdown(t *testing.T) {
	sep := string(os.PathSeparator)
	pfs := &storePanicFS{FS: vfs.Default, match: sep + "BAD" + sep + "msgs" + sep}
	o := testOptions()
	o.JetStream = true
	o.StoreDir = t.TempDir()
	o.fsys = pfs
	s := runServer(t, o)
	nc, js := jsClient(t, s)
	createStream(t, js, jetstream.StreamConfig{Name: "BAD", Subjects: []string{"bad"}, Storage: jetstream.FileStorage})
	for i := 0; i < 5; i++ {
		if _, err := js.Publish(ctx(t), "bad", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	nc.Close()
	pfs.armed.Store(true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Shutdown()
	}()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("Shutdown did not return after the store panicked")
	}
	if !pfs.fired.Load() {
		t.Fatal("the armed store write never came: the test proves nothing")
	}
}
