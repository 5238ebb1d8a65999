package vfs

import (
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/nats-io/nats-server/v2/internal/fdlru"
	"github.com/nats-io/nats-server/v2/internal/lockorder"
)

// Pool is a file system whose open files share a budget of descriptors:
// when more than the limit are open, the least recently used ones that no
// operation is using and that hold no unsynced write are closed, and
// opened again (by name, without O_CREATE, O_EXCL and O_TRUNC) by their
// next operation. The policy is package fdlru's; Pool does the I/O. A
// file written and not yet synced stays open, so a later fsync covers its
// writes through the descriptor that made them, and a write-back error
// cannot be missed by an fsync on a descriptor opened after it. The limit
// is soft: it is exceeded only by files in use or holding unsynced writes.
//
// A file is opened again by its path: the pool follows removals and
// renames made through it (pool_names.go), as a descriptor would.
type Pool struct {
	base    FS
	mu      lockorder.Mutex[lockorder.Pool]
	lru     *fdlru.LRU[*poolFile]
	byName  map[string][]*poolFile // open files by clean path (pool_names.go)
	byDir   map[string]int         // open files below each directory
	reopens atomic.Uint64
}

// NewPool returns base with its open files bounded by limit.
func NewPool(base FS, limit int) *Pool {
	return &Pool{base: base, lru: fdlru.New[*poolFile](limit)}
}

// Base is the file system under the pool.
func (p *Pool) Base() FS { return p.base }

// Stats returns the limit, how many files are open and how many times a
// file closed by the budget was opened again.
func (p *Pool) Stats() (limit, open int, reopens uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lru.Limit(), p.lru.Open(), p.reopens.Load()
}

// SetLimit changes the limit; it is enforced at the next file use.
func (p *Pool) SetLimit(limit int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lru.SetLimit(limit)
}

// OpenFile opens name on the base file system and counts it against the
// budget (which may close other files).
func (p *Pool) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := p.base.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	pf := &poolFile{pool: p, name: name, path: filepath.Clean(name), flag: flag &^ (os.O_CREATE | os.O_EXCL | os.O_TRUNC),
		append: flag&os.O_APPEND != 0}
	if r, ok := p.base.(reopener); ok {
		pf.tag = r.handleTag(f)
	}
	p.mu.Lock()
	pf.e = p.lru.Add(pf)
	p.register(pf)
	p.lru.Pin(pf.e)
	pf.f = f
	victims := p.take(p.lru.Opened(pf.e))
	victims = append(victims, p.take(p.lru.Unpin(pf.e))...)
	p.mu.Unlock()
	closeAll(victims)
	return pf, nil
}

func (p *Pool) Link(oldname, newname string) error { return p.base.Link(oldname, newname) }
func (p *Pool) MkdirAll(dir string, perm os.FileMode) error {
	return p.base.MkdirAll(dir, perm)
}
func (p *Pool) ReadDir(dir string) ([]os.DirEntry, error) { return p.base.ReadDir(dir) }
func (p *Pool) Stat(name string) (os.FileInfo, error)     { return p.base.Stat(name) }
func (p *Pool) SyncDir(dir string) error                  { return p.base.SyncDir(dir) }

// reopener is a file system whose handles die with a crash (MemFS): a
// file the budget closed is opened again only while a handle opened with
// it would still work.
type reopener interface {
	handleTag(File) uint64
	reopen(name string, flag int, tag uint64) (File, error)
}

func (m *MemFS) handleTag(f File) uint64 { return f.(*memFile).gen }

// reopen opens name for a handle opened at generation tag: ErrCrashed
// once the file system crashed or was killed since.
func (m *MemFS) reopen(name string, flag int, tag uint64) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if tag != m.gen {
		return nil, ErrCrashed
	}
	return m.openLocked(name, flag)
}

// openAgain opens f's file again after the budget closed it.
func (p *Pool) openAgain(f *poolFile, path string) (File, error) {
	if r, ok := p.base.(reopener); ok {
		return r.reopen(path, f.flag, f.tag)
	}
	return p.base.OpenFile(path, f.flag, 0)
}

// take detaches the open files of the victims the LRU chose (p.mu held).
func (p *Pool) take(victims []*poolFile) []File {
	if len(victims) == 0 {
		return nil
	}
	files := make([]File, 0, len(victims))
	for _, v := range victims {
		files = append(files, v.f)
		v.f = nil
	}
	return files
}

// closeAll closes the files of victims: clean and unused, so a close
// error says nothing about their data.
func closeAll(files []File) {
	for _, f := range files {
		f.Close()
	}
}
