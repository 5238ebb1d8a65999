package faultfs

import (
	"os"
	"strings"
	"sync"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// StallFS blocks the opens, writes and fsyncs of every file whose path
// contains Match while a stall is on (a disk that stops answering for
// some files), until the stall is lifted. With SyncsOnly, only fsyncs
// block: writes reach the page cache as usual. Files are wrapped when
// they are opened, so a stall reaches files opened before it began.
type StallFS struct {
	vfs.FS
	Match     string
	SyncsOnly bool

	mu   sync.Mutex
	gate chan struct{} // nil: no stall; closed when the stall is lifted
	hits int           // operations that blocked
}

// Stall blocks the matching files' operations from now on.
func (f *StallFS) Stall() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gate == nil {
		f.gate = make(chan struct{})
	}
}

// Lift lets every blocked operation go on and blocks no more.
func (f *StallFS) Lift() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gate != nil {
		close(f.gate)
		f.gate = nil
	}
}

// Gate is the current stall's channel, closed when it is lifted (nil
// when no stall is on): a test blocks something else on the same stall.
func (f *StallFS) Gate() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gate
}

// Blocked reports how many operations blocked so far.
func (f *StallFS) Blocked() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits
}

// wait blocks while a stall is on, for a matching file (only for an
// fsync when SyncsOnly).
func (f *StallFS) wait(name string, sync bool) {
	if !strings.Contains(name, f.Match) || f.SyncsOnly && !sync {
		return
	}
	f.mu.Lock()
	gate := f.gate
	if gate != nil {
		f.hits++
	}
	f.mu.Unlock()
	if gate != nil {
		<-gate
	}
}

// OpenFile opens name through FS (blocking first while a stall is on),
// wrapped when its path matches.
func (f *StallFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f.wait(name, false)
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.Contains(name, f.Match) {
		return file, err
	}
	return &stallFile{File: file, fs: f}, nil
}

type stallFile struct {
	vfs.File
	fs *StallFS
}

func (h *stallFile) Write(p []byte) (int, error) {
	h.fs.wait(h.Name(), false)
	return h.File.Write(p)
}

func (h *stallFile) WriteAt(p []byte, off int64) (int, error) {
	h.fs.wait(h.Name(), false)
	return h.File.WriteAt(p, off)
}

func (h *stallFile) Sync() error {
	h.fs.wait(h.Name(), true)
	return h.File.Sync()
}
