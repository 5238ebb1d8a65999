package wal

import (
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// panicFS panics in the next write once armed (a bug in the write path).
type panicFS struct {
	vfs.FS
	armed atomic.Bool
}

func (f *panicFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &panicFile{File: file, fs: f}, nil
}

type panicFile struct {
	vfs.File
	fs *panicFS
}

func (h *panicFile) WriteAt(b []byte, off int64) (int, error) {
	if h.fs.armed.CompareAndSwap(true, false) {
		panic("test: write path bug")
	}
	return h.File.WriteAt(b, off)
}

// TestWALPanicInSyncReleasesLock: a panic in Sync's write under mu (Sync
// took mu without defer) left mu locked, so the log's Close, and every
// reader, waited forever (a raft group's halt then hung the server's
// Shutdown). The panic still reaches the caller; the log turns read-only
// and closes.
func TestWALPanicInSyncReleasesLock(t *testing.T) {
	fs := &panicFS{FS: vfs.NewMem()}
	w := mustOpen(t, fs, memDir, Options{Logf: func(string, ...any) {}})
	mustAppend(t, w, batch(1, 5, 1))
	fs.armed.Store(true)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("Sync did not panic")
			}
		}()
		_ = w.Sync()
	}()
	done := make(chan error, 1)
	go func() {
		if w.LastIndex() != 5 {
			t.Error("LastIndex changed")
		}
		if err := w.Append(batch(6, 6, 1)); err == nil {
			t.Error("append to a log that panicked succeeded")
		}
		done <- w.Close()
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the log's mutex stayed locked after the panic")
	}
}
