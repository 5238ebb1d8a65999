package vfs

import (
	"errors"
	"github.com/nats-io/nats-server/v2/internal/lockorder"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// ErrCrashed is returned by handles opened before MemFS.Crash.
var ErrCrashed = errors.New("vfs: file system crashed")

// MemFS is an in-memory FS that models what survives a power loss: a file's
// content survives up to its last Sync, and a creation, rename or removal
// survives only once SyncDir was called on its directory. A directory made
// survives once the directory holding it was synced (MkdirAllSynced), and
// so does a directory's removal (RemoveAllSynced). It is safe for
// concurrent use.
type MemFS struct {
	mu      lockorder.Mutex[lockorder.MemFS]
	files   map[string]*memInode // the namespace as the running system sees it
	durable map[string]*memInode // the namespace as of the last SyncDir calls
	dirs    map[string]bool
	durDirs map[string]bool // the directories as of the last SyncDir calls
	inject  func(op, name string) error
	gen     uint64 // incremented by Crash; older handles fail
}

type memInode struct {
	data   []byte
	synced []byte
}

// NewMem returns an empty in-memory file system.
func NewMem() *MemFS {
	return &MemFS{
		files:   map[string]*memInode{},
		durable: map[string]*memInode{},
		dirs:    map[string]bool{"/": true, ".": true},
		durDirs: map[string]bool{"/": true, ".": true},
	}
}

// InjectError installs f, called before every operation with its name
// ("open", "read", "write", "sync", "truncate", "close", "stat", "remove",
// "rename", "link", "mkdir", "readdir", "syncdir") and the file or directory; a
// non-nil result fails the operation without side effects. nil uninstalls.
func (m *MemFS) InjectError(f func(op, name string) error) {
	m.mu.Lock()
	m.inject = f
	m.mu.Unlock()
}

func (m *MemFS) check(op, name string) error {
	if m.inject != nil {
		return m.inject(op, name)
	}
	return nil
}

// Crash simulates a power loss: the namespace reverts to what SyncDir made
// durable and every file keeps only the bytes it had at its last Sync.
// Handles opened before the crash fail with ErrCrashed from now on.
func (m *MemFS) Crash() {
	m.CrashKeep(nil)
}

// CrashKeep is Crash where keep(name, n) chooses how many of the n bytes a
// file had appended past its synced length survive (a torn write).
func (m *MemFS) CrashKeep(keep func(name string, n int) int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen++
	dirs := map[string]bool{}
	for d := range m.durDirs {
		if m.durableDirLocked(d) {
			dirs[d] = true
		}
	}
	m.dirs = dirs
	m.durDirs = maps.Clone(dirs)
	files := make(map[string]*memInode, len(m.durable))
	for name, ino := range m.durable {
		if !dirs[filepath.Dir(name)] {
			delete(m.durable, name)
			continue
		}
		data := append([]byte(nil), ino.synced...)
		if n := len(ino.data) - len(ino.synced); keep != nil && n > 0 {
			k := min(max(keep(name, n), 0), n)
			data = append(data, ino.data[len(ino.synced):len(ino.synced)+k]...)
		}
		ino.data = data
		ino.synced = append([]byte(nil), data...)
		files[name] = ino
	}
	m.files = files
}

// Kill simulates the end of the process that used the file system (kill
// -9) while the machine runs on: the kernel keeps every write, synced or
// not, and every creation, rename and removal; only the handles opened
// before fail with ErrCrashed from now on. What the process wrote counts
// as durable from then on (the model does not follow the page cache).
func (m *MemFS) Kill() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen++
	m.durDirs = maps.Clone(m.dirs)
	m.durable = make(map[string]*memInode, len(m.files))
	for name, ino := range m.files {
		ino.synced = append([]byte(nil), ino.data...)
		m.durable[name] = ino
	}
}

// durableDirLocked reports whether d and every directory holding it
// survive a crash.
func (m *MemFS) durableDirLocked(d string) bool {
	for ; d != "/" && d != "."; d = filepath.Dir(d) {
		if !m.durDirs[d] {
			return false
		}
	}
	return true
}

// FlipBit flips one bit of a file's content (synced and not), as a disk
// error would. Offsets past the end are ignored.
func (m *MemFS) FlipBit(name string, offset int64, bit uint) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ino := m.files[filepath.Clean(name)]
	if ino == nil {
		return
	}
	if offset >= 0 && offset < int64(len(ino.data)) {
		ino.data[offset] ^= 1 << (bit % 8)
	}
	if offset >= 0 && offset < int64(len(ino.synced)) {
		ino.synced[offset] ^= 1 << (bit % 8)
	}
}

func (m *MemFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.openLocked(name, flag)
}

func (m *MemFS) openLocked(name string, flag int) (File, error) {
	name = filepath.Clean(name)
	if err := m.check("open", name); err != nil {
		return nil, err
	}
	ino := m.files[name]
	switch {
	case ino == nil && flag&os.O_CREATE == 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	case ino != nil && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrExist}
	case m.dirs[name]:
		return nil, &fs.PathError{Op: "open", Path: name, Err: errors.New("is a directory")}
	case ino == nil && !m.dirs[filepath.Dir(name)]:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	case ino == nil:
		ino = &memInode{}
		m.files[name] = ino
	}
	writable := flag&(os.O_WRONLY|os.O_RDWR) != 0
	if flag&os.O_TRUNC != 0 && writable {
		ino.data = ino.data[:0:0]
	}
	return &memFile{fs: m, name: name, ino: ino, gen: m.gen, appnd: flag&os.O_APPEND != 0,
		readable: flag&os.O_WRONLY == 0, writable: writable}, nil
}

func (m *MemFS) Remove(name string) error {
	name = filepath.Clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check("remove", name); err != nil {
		return err
	}
	if m.files[name] != nil {
		delete(m.files, name)
		return nil
	}
	if m.dirs[name] {
		for other := range m.files {
			if filepath.Dir(other) == name {
				return &fs.PathError{Op: "remove", Path: name, Err: errors.New("directory not empty")}
			}
		}
		delete(m.dirs, name)
		return nil
	}
	return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
}

// under reports whether p is dir or inside it.
func under(dir, p string) bool {
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

// forgetLocked drops dir and everything below it from the durable
// namespace.
func (m *MemFS) forgetLocked(dir string) {
	for p := range m.durable {
		if under(dir, p) {
			delete(m.durable, p)
		}
	}
	for d := range m.durDirs {
		if under(dir, d) && d != "/" && d != "." {
			delete(m.durDirs, d)
		}
	}
}

// RemoveAll removes name and everything below it; like any removal, the
// directory's is durable once the directory holding it is synced (until
// then a crash brings back what was durable in it).
func (m *MemFS) RemoveAll(name string) error {
	name = filepath.Clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check("remove", name); err != nil {
		return err
	}
	for p := range m.files {
		if under(name, p) {
			delete(m.files, p)
		}
	}
	for d := range m.dirs {
		if under(name, d) && d != "/" && d != "." {
			delete(m.dirs, d)
		}
	}
	if !m.durDirs[name] {
		m.forgetLocked(name) // a file, or a directory never durable: gone for good
	}
	return nil
}

func (m *MemFS) Rename(oldname, newname string) error {
	oldname, newname = filepath.Clean(oldname), filepath.Clean(newname)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check("rename", oldname); err != nil {
		return err
	}
	ino := m.files[oldname]
	if ino == nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: fs.ErrNotExist}
	}
	if !m.dirs[filepath.Dir(newname)] {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: fs.ErrNotExist}
	}
	delete(m.files, oldname)
	m.files[newname] = ino
	return nil
}

// Link gives oldname's inode a second name; like a creation, it is durable
// once its directory is synced.
func (m *MemFS) Link(oldname, newname string) error {
	oldname, newname = filepath.Clean(oldname), filepath.Clean(newname)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check("link", oldname); err != nil {
		return err
	}
	ino := m.files[oldname]
	switch {
	case ino == nil || !m.dirs[filepath.Dir(newname)]:
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: fs.ErrNotExist}
	case m.files[newname] != nil || m.dirs[newname]:
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: fs.ErrExist}
	}
	m.files[newname] = ino
	return nil
}

func (m *MemFS) MkdirAll(dir string, perm os.FileMode) error {
	dir = filepath.Clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check("mkdir", dir); err != nil {
		return err
	}
	for d := dir; !m.dirs[d]; d = filepath.Dir(d) {
		if m.files[d] != nil {
			return &fs.PathError{Op: "mkdir", Path: d, Err: errors.New("not a directory")}
		}
		m.dirs[d] = true
	}
	return nil
}

func (m *MemFS) ReadDir(dir string) ([]os.DirEntry, error) {
	dir = filepath.Clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check("readdir", dir); err != nil {
		return nil, err
	}
	if !m.dirs[dir] {
		return nil, &fs.PathError{Op: "readdir", Path: dir, Err: fs.ErrNotExist}
	}
	var out []os.DirEntry
	for p, ino := range m.files {
		if filepath.Dir(p) == dir {
			out = append(out, fs.FileInfoToDirEntry(memInfo{name: filepath.Base(p), size: int64(len(ino.data))}))
		}
	}
	for d := range m.dirs {
		if d != dir && filepath.Dir(d) == dir {
			out = append(out, fs.FileInfoToDirEntry(memInfo{name: filepath.Base(d), dir: true}))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

func (m *MemFS) Stat(name string) (os.FileInfo, error) {
	name = filepath.Clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check("stat", name); err != nil {
		return nil, err
	}
	if ino := m.files[name]; ino != nil {
		return memInfo{name: filepath.Base(name), size: int64(len(ino.data))}, nil
	}
	if m.dirs[name] {
		return memInfo{name: filepath.Base(name), dir: true}, nil
	}
	return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}

func (m *MemFS) SyncDir(dir string) error {
	dir = filepath.Clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check("syncdir", dir); err != nil {
		return err
	}
	if !m.dirs[dir] {
		return &fs.PathError{Op: "syncdir", Path: dir, Err: fs.ErrNotExist}
	}
	for p := range m.durable {
		if filepath.Dir(p) == dir && m.files[p] == nil {
			delete(m.durable, p)
		}
	}
	for p, ino := range m.files {
		if filepath.Dir(p) == dir {
			m.durable[p] = ino
		}
	}
	for d := range m.dirs {
		if d != dir && filepath.Dir(d) == dir {
			m.durDirs[d] = true
		}
	}
	for d := range m.durDirs {
		if d != dir && filepath.Dir(d) == dir && !m.dirs[d] {
			m.forgetLocked(d)
		}
	}
	return nil
}

type memInfo struct {
	name string
	size int64
	dir  bool
}

func (fi memInfo) Name() string       { return fi.name }
func (fi memInfo) Size() int64        { return fi.size }
func (fi memInfo) ModTime() time.Time { return time.Time{} }
func (fi memInfo) IsDir() bool        { return fi.dir }
func (fi memInfo) Sys() any           { return nil }
func (fi memInfo) Mode() os.FileMode {
	if fi.dir {
		return fs.ModeDir | 0o750
	}
	return 0o640
}

// memFile is a handle on a memInode; its fields are guarded by fs.mu.
type memFile struct {
	fs       *MemFS
	name     string
	ino      *memInode
	gen      uint64
	pos      int64
	appnd    bool
	readable bool
	writable bool
	closed   bool
}

// begin locks the file system and checks that the handle is usable for op.
func (f *memFile) begin(op string) error {
	f.fs.mu.Lock()
	switch {
	case f.closed:
		return os.ErrClosed
	case f.gen != f.fs.gen:
		return ErrCrashed
	}
	return f.fs.check(op, f.name)
}

func (f *memFile) Name() string { return f.name }

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	defer f.fs.mu.Unlock()
	if err := f.begin("read"); err != nil {
		return 0, err
	}
	if !f.readable {
		return 0, errors.New("vfs: file not open for reading")
	}
	if off < 0 {
		return 0, errors.New("vfs: negative offset")
	}
	if off >= int64(len(f.ino.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.ino.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	defer f.fs.mu.Unlock()
	if err := f.begin("write"); err != nil {
		return 0, err
	}
	if f.appnd {
		f.pos = int64(len(f.ino.data))
	}
	n, err := f.writeAtLocked(p, f.pos)
	f.pos += int64(n)
	return n, err
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	defer f.fs.mu.Unlock()
	if err := f.begin("write"); err != nil {
		return 0, err
	}
	if f.appnd {
		return 0, errors.New("vfs: WriteAt on a file opened with O_APPEND")
	}
	return f.writeAtLocked(p, off)
}

func (f *memFile) writeAtLocked(p []byte, off int64) (int, error) {
	if !f.writable {
		return 0, errors.New("vfs: file not open for writing")
	}
	if off < 0 {
		return 0, errors.New("vfs: negative offset")
	}
	end := off + int64(len(p))
	if end > int64(len(f.ino.data)) {
		if end > int64(cap(f.ino.data)) {
			grown := make([]byte, len(f.ino.data), max(end, 2*int64(cap(f.ino.data))))
			copy(grown, f.ino.data)
			f.ino.data = grown
		}
		f.ino.data = f.ino.data[:end]
	}
	copy(f.ino.data[off:], p)
	return len(p), nil
}

func (f *memFile) Sync() error {
	defer f.fs.mu.Unlock()
	if err := f.begin("sync"); err != nil {
		return err
	}
	f.ino.synced = append(f.ino.synced[:0], f.ino.data...)
	return nil
}

func (f *memFile) Truncate(size int64) error {
	defer f.fs.mu.Unlock()
	if err := f.begin("truncate"); err != nil {
		return err
	}
	if !f.writable || size < 0 {
		return errors.New("vfs: bad truncate")
	}
	if size <= int64(len(f.ino.data)) {
		f.ino.data = f.ino.data[:size:size]
		return nil
	}
	f.ino.data = append(f.ino.data, make([]byte, size-int64(len(f.ino.data)))...)
	return nil
}

func (f *memFile) Stat() (os.FileInfo, error) {
	defer f.fs.mu.Unlock()
	if err := f.begin("stat"); err != nil {
		return nil, err
	}
	return memInfo{name: filepath.Base(f.name), size: int64(len(f.ino.data))}, nil
}

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return os.ErrClosed
	}
	f.closed = true
	if f.gen != f.fs.gen {
		return ErrCrashed
	}
	return f.fs.check("close", f.name)
}
