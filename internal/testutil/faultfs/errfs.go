package faultfs

import (
	"os"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// ErrFS makes the next writes or fsyncs of a file fail with an I/O error
// (Err, syscall.EIO when nil), as a failing or full disk does: Fails is
// how many more fail (0: none, negative: every one). Only files whose
// path contains Match (every file when it is empty) are wrapped. Failed
// counts the calls made to fail.
type ErrFS struct {
	vfs.FS
	Match  string
	Err    error
	Fails  atomic.Int64
	Failed atomic.Int64
}

// OpenFile opens name through FS, wrapped when its path matches.
func (f *ErrFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.Contains(name, f.Match) {
		return file, err
	}
	return &errFile{File: file, fs: f}, nil
}

// fail reports the error this call gets, nil when it goes through.
func (f *ErrFS) fail(name string) error {
	for {
		n := f.Fails.Load()
		if n == 0 {
			return nil
		}
		if n < 0 || f.Fails.CompareAndSwap(n, n-1) {
			break
		}
	}
	f.Failed.Add(1)
	err := f.Err
	if err == nil {
		err = syscall.EIO
	}
	return &os.PathError{Op: "write", Path: name, Err: err}
}

type errFile struct {
	vfs.File
	fs *ErrFS
}

func (h *errFile) WriteAt(b []byte, off int64) (int, error) {
	if err := h.fs.fail(h.Name()); err != nil {
		return 0, err
	}
	return h.File.WriteAt(b, off)
}

func (h *errFile) Write(b []byte) (int, error) {
	if err := h.fs.fail(h.Name()); err != nil {
		return 0, err
	}
	return h.File.Write(b)
}

func (h *errFile) Sync() error {
	if err := h.fs.fail(h.Name()); err != nil {
		return err
	}
	return h.File.Sync()
}
