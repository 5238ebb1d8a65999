// Package vfs is the file-system seam used by the stores: every disk access
// goes through FS so tests can swap the OS for an in-memory file system that
// can crash (drop unsynced bytes), flip bits and fail chosen operations.
package vfs

import (
	"errors"
	"io"
	"os"
	"path/filepath"
)

// File is an open file. Writes through Write go to the current position
// (the end when opened with O_APPEND); WriteAt writes at an offset and must
// not be used on a file opened with O_APPEND.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Writer
	io.Closer
	Sync() error
	Truncate(size int64) error
	Stat() (os.FileInfo, error)
	Name() string
}

// FS is a file system.
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	Remove(name string) error
	RemoveAll(name string) error
	Rename(oldname, newname string) error
	// Link makes newname another name of oldname's file (a hard link):
	// writes through either name show in both.
	Link(oldname, newname string) error
	MkdirAll(dir string, perm os.FileMode) error
	ReadDir(dir string) ([]os.DirEntry, error)
	Stat(name string) (os.FileInfo, error)
	// SyncDir makes the creations, renames and removals of entries in dir
	// durable.
	SyncDir(dir string) error
}

// Default is the operating system's file system.
var Default FS = osFS{}

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := openOS(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (osFS) Remove(name string) error                    { return os.Remove(name) }
func (osFS) RemoveAll(name string) error                 { return os.RemoveAll(name) }
func (osFS) Rename(oldname, newname string) error        { return os.Rename(oldname, newname) }
func (osFS) Link(oldname, newname string) error          { return os.Link(oldname, newname) }
func (osFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }
func (osFS) ReadDir(dir string) ([]os.DirEntry, error)   { return os.ReadDir(dir) }
func (osFS) Stat(name string) (os.FileInfo, error)       { return os.Stat(name) }

func (osFS) SyncDir(dir string) error {
	d, err := openOS(dir, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// SyncsInParallel reports whether independent fsyncs on fs should be run
// at the same time: on the operating system's file system concurrent
// fsyncs share one journal commit; the in-memory file system of tests and
// the simulator gets one order.
func SyncsInParallel(fs FS) bool {
	if p, ok := fs.(*Pool); ok {
		fs = p.base
	}
	return fs == Default
}

// MkdirAllSynced makes dir and any missing parents, and syncs the
// directory holding each one it made, so that they survive a power loss
// (a directory entry is durable only once its directory is synced).
func MkdirAllSynced(fs FS, dir string, perm os.FileMode) error {
	parents, err := MkdirAllUnsynced(fs, dir, perm)
	if err != nil {
		return err
	}
	for _, p := range parents { // outermost first
		if err := fs.SyncDir(p); err != nil {
			return err
		}
	}
	return nil
}

// MkdirAllUnsynced makes dir and any missing parents and returns the
// directories to sync, outermost first, before the new ones may be
// relied on after a power loss: the directory holding each one made.
func MkdirAllUnsynced(fs FS, dir string, perm os.FileMode) ([]string, error) {
	dir = filepath.Clean(dir)
	var made []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := fs.Stat(d); err == nil {
			break
		}
		made = append(made, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if len(made) == 0 {
		return nil, nil
	}
	if err := fs.MkdirAll(dir, perm); err != nil {
		return nil, err
	}
	parents := make([]string, 0, len(made))
	for i := len(made) - 1; i >= 0; i-- {
		parents = append(parents, filepath.Dir(made[i]))
	}
	return parents, nil
}

// RemoveAllSynced removes dir and everything below it and syncs the
// directory that held it, so that a power loss cannot bring it back.
func RemoveAllSynced(fs FS, dir string) error {
	if err := fs.RemoveAll(dir); err != nil {
		return err
	}
	err := fs.SyncDir(filepath.Dir(filepath.Clean(dir)))
	if errors.Is(err, os.ErrNotExist) {
		return nil // the directory holding it is gone too
	}
	return err
}

// ReadFile reads a whole file.
func ReadFile(fs FS, name string) ([]byte, error) {
	f, err := fs.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, fi.Size())
	n, err := f.ReadAt(buf, 0)
	if err == io.EOF && n == len(buf) {
		err = nil
	}
	return buf[:n], err
}

// WriteFileSynced creates (or truncates) name, writes data (the parts in
// order) and syncs it. Its directory entry is durable only once the
// directory is synced.
func WriteFileSynced(fs FS, name string, data ...[]byte) error {
	return writeSynced(fs, name, func(f File) error {
		for _, part := range data {
			if _, err := f.Write(part); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeSynced creates name, lets write fill it and syncs it.
func writeSynced(fs FS, name string, write func(File) error) error {
	f, err := fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return err
	}
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// WriteFileAtomic replaces name with data (the parts in order) durably: it
// writes and syncs name+".tmp", renames it over name and syncs the
// directory. A crash leaves either the old or the new content under name.
func WriteFileAtomic(fs FS, name string, data ...[]byte) error {
	return replaceFile(fs, name, func(tmp string) error { return WriteFileSynced(fs, tmp, data...) })
}

// WriteFileAtomicFrom is WriteFileAtomic for head followed by all that r
// yields, which is copied through a small buffer (r may be larger than
// memory).
func WriteFileAtomicFrom(fs FS, name string, head []byte, r io.Reader) error {
	return replaceFile(fs, name, func(tmp string) error {
		return writeSynced(fs, tmp, func(f File) error {
			if _, err := f.Write(head); err != nil {
				return err
			}
			_, err := io.CopyBuffer(struct{ io.Writer }{f}, r, make([]byte, 256<<10))
			return err
		})
	})
}

// replaceFile has write fill and sync name+".tmp", renames it over name
// and syncs the directory.
func replaceFile(fs FS, name string, write func(tmp string) error) error {
	tmp := name + ".tmp"
	err := write(tmp)
	if err == nil {
		err = fs.Rename(tmp, name)
	}
	if err == nil {
		err = fs.SyncDir(filepath.Dir(name))
	}
	if err != nil {
		fs.Remove(tmp)
	}
	return err
}
