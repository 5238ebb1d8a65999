// Package faultfs holds file systems for tests that inject faults. Only
// test files import it.
package faultfs

import (
	"os"
	"strings"
	"sync/atomic"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// PanicFS makes the next write or fsync of a file panic, once armed: a bug
// in a write path. Only files whose path contains Match (every file when
// it is empty) are wrapped. Firing disarms and sets Fired.
type PanicFS struct {
	vfs.FS
	Match string
	// AtOnly keeps Write (the sequential write) from firing: only WriteAt.
	AtOnly bool
	// Write arms a panic in the next write, Sync in the next fsync.
	Write, Sync atomic.Bool
	Fired       atomic.Bool
}

// OpenFile opens name through FS, wrapped when its path matches.
func (f *PanicFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.Contains(name, f.Match) {
		return file, err
	}
	return &panicFile{File: file, fs: f}, nil
}

type panicFile struct {
	vfs.File
	fs *PanicFS
}

func (h *panicFile) fire(armed *atomic.Bool, msg string) {
	if armed.CompareAndSwap(true, false) {
		h.fs.Fired.Store(true)
		panic(msg)
	}
}

func (h *panicFile) WriteAt(b []byte, off int64) (int, error) {
	h.fire(&h.fs.Write, "test: write path bug")
	return h.File.WriteAt(b, off)
}

func (h *panicFile) Write(b []byte) (int, error) {
	if !h.fs.AtOnly {
		h.fire(&h.fs.Write, "test: write path bug")
	}
	return h.File.Write(b)
}

func (h *panicFile) Sync() error {
	h.fire(&h.fs.Sync, "test: sync path bug")
	return h.File.Sync()
}
