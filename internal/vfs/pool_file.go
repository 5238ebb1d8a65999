package vfs

import (
	"os"
	"sync/atomic"

	"github.com/nats-io/nats-server/v2/internal/fdlru"
	"github.com/nats-io/nats-server/v2/internal/lockorder"
)

// poolFile is a file of a Pool: every operation pins it (opening it again
// when the budget closed it) and unpins it when done.
type poolFile struct {
	pool   *Pool
	name   string // as opened (Name)
	flag   int    // to open it again
	append bool   // O_APPEND: Write appends
	tag    uint64 // the base's handle generation (MemFS)
	// mu serializes the pins of a closed file (pinSlow), so one of them
	// opens it again while the others wait; no I/O but that open runs
	// under it.
	mu     lockorder.Mutex[lockorder.PoolFile]
	e      *fdlru.Entry[*poolFile] // pool.mu
	f      File                    // pool.mu; nil while closed
	closed bool                    // pool.mu: Close was called
	// path (pool.mu) is where it is opened again: name cleaned, then
	// renamed along; orphaned (pool.mu) says its name was removed, so it
	// stays pinned, open, until its Close.
	path     string
	orphaned bool
	pos      atomic.Int64 // Write's offset (without O_APPEND)
}

// pin marks f in use and returns its open file, opening it again when
// the budget closed it, and the write count a sync starts from.
func (f *poolFile) pin() (File, uint64, error) {
	p := f.pool
	p.mu.Lock()
	if !f.closed && f.e.IsOpen() { // the common case: one lock
		p.lru.Pin(f.e)
		file, gen := f.f, p.lru.SyncBegin(f.e)
		p.mu.Unlock()
		return file, gen, nil
	}
	p.mu.Unlock()
	return f.pinSlow()
}

// pinSlow is pin for a file that may have to be opened again: f.mu lets
// one pin open it while the others wait.
func (f *poolFile) pinSlow() (File, uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.pool
	p.mu.Lock()
	if f.closed {
		p.mu.Unlock()
		return nil, 0, os.ErrClosed
	}
	reopen := p.lru.Pin(f.e)
	file, gen, path := f.f, p.lru.SyncBegin(f.e), f.path
	p.mu.Unlock()
	if !reopen {
		return file, gen, nil
	}
	file, err := p.openAgain(f, path)
	p.mu.Lock()
	var victims []File
	if err != nil {
		victims = p.take(p.lru.Unpin(f.e))
	} else {
		f.f = file
		victims = p.take(p.lru.Opened(f.e))
	}
	p.mu.Unlock()
	closeAll(victims)
	if err != nil {
		return nil, 0, err
	}
	p.reopens.Add(1)
	return file, gen, nil
}

// unpin ends an operation: wrote says it wrote (the file is dirty until
// a later sync), synced that it was a successful sync begun at gen.
func (f *poolFile) unpin(wrote, synced bool, gen uint64) {
	p := f.pool
	p.mu.Lock()
	if !f.closed {
		if wrote {
			p.lru.Wrote(f.e)
		}
		if synced {
			p.lru.Synced(f.e, gen)
		}
	}
	victims := p.take(p.lru.Unpin(f.e))
	p.mu.Unlock()
	closeAll(victims)
}

func (f *poolFile) ReadAt(b []byte, off int64) (int, error) {
	file, _, err := f.pin()
	if err != nil {
		return 0, err
	}
	defer f.unpin(false, false, 0)
	return file.ReadAt(b, off)
}

func (f *poolFile) WriteAt(b []byte, off int64) (int, error) {
	file, _, err := f.pin()
	if err != nil {
		return 0, err
	}
	defer f.unpin(true, false, 0)
	return file.WriteAt(b, off)
}

// Write writes at the end (O_APPEND) or at the offset the previous Writes
// reached: the position of a file opened again starts at 0.
func (f *poolFile) Write(b []byte) (int, error) {
	file, _, err := f.pin()
	if err != nil {
		return 0, err
	}
	defer f.unpin(true, false, 0)
	if f.append {
		return file.Write(b)
	}
	n, err := file.WriteAt(b, f.pos.Load())
	f.pos.Add(int64(n))
	return n, err
}

func (f *poolFile) Sync() error {
	file, gen, err := f.pin()
	if err != nil {
		return err
	}
	err = file.Sync()
	f.unpin(false, err == nil, gen)
	return err
}

func (f *poolFile) Truncate(size int64) error {
	file, _, err := f.pin()
	if err != nil {
		return err
	}
	defer f.unpin(true, false, 0)
	return file.Truncate(size)
}

func (f *poolFile) Stat() (os.FileInfo, error) {
	file, _, err := f.pin()
	if err != nil {
		return nil, err
	}
	defer f.unpin(false, false, 0)
	return file.Stat()
}

func (f *poolFile) Name() string { return f.name }

// Close closes the file and takes it off the budget.
func (f *poolFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.pool
	p.mu.Lock()
	if f.closed {
		p.mu.Unlock()
		return os.ErrClosed
	}
	f.closed = true
	p.lru.Remove(f.e)
	if !f.orphaned {
		p.unregister(f)
	}
	file := f.f
	f.f = nil
	p.mu.Unlock()
	if file == nil {
		return nil
	}
	return file.Close()
}
