package vfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// A pooled file is opened again by its path, so the pool follows what
// happens to the names of its open files, as a descriptor would:
//
//   - Remove and RemoveAll of a file still open (an unnamed scratch file,
//     written and read through its handle after its name is gone) open it
//     again if the budget had closed it and keep it open until its Close
//     (pinned: it could never be opened again);
//   - Rename of a file or of a directory holding open files keeps them
//     open across the rename and then gives them their new path.
//
// byName maps each clean path to its open pooled files, and byDir counts
// the open pooled files below each directory, so that a removal or rename
// with none below it looks at one name only (pool.mu).

// register adds f under its path (p.mu held).
func (p *Pool) register(f *poolFile) {
	if p.byName == nil {
		p.byName, p.byDir = map[string][]*poolFile{}, map[string]int{}
	}
	p.byName[f.path] = append(p.byName[f.path], f)
	for d := filepath.Dir(f.path); ; d = filepath.Dir(d) {
		p.byDir[d]++
		if filepath.Dir(d) == d {
			break
		}
	}
}

// unregister removes f (p.mu held).
func (p *Pool) unregister(f *poolFile) {
	fs := p.byName[f.path]
	for i, g := range fs {
		if g == f {
			fs = append(fs[:i], fs[i+1:]...)
			break
		}
	}
	if len(fs) == 0 {
		delete(p.byName, f.path)
	} else {
		p.byName[f.path] = fs
	}
	for d := filepath.Dir(f.path); ; d = filepath.Dir(d) {
		if p.byDir[d]--; p.byDir[d] <= 0 {
			delete(p.byDir, d)
		}
		if filepath.Dir(d) == d {
			break
		}
	}
}

// atOrBelow reports whether path is name or below it.
func atOrBelow(path, name string) bool {
	return path == name || strings.HasPrefix(path, name+string(filepath.Separator))
}

// hold pins every open pooled file at or below name, opening again those
// the budget closed, and returns them (to unpin, or to keep pinned). A
// file that cannot be opened again fails it (nothing stays held): the
// name must then not change, or that file's next reopen would find
// whatever took its place.
func (p *Pool) hold(name string) ([]*poolFile, error) {
	name = filepath.Clean(name)
	p.mu.Lock()
	match := append([]*poolFile(nil), p.byName[name]...)
	if p.byDir[name] > 0 {
		for path, fs := range p.byName {
			if path != name && atOrBelow(path, name) {
				match = append(match, fs...)
			}
		}
	}
	p.mu.Unlock()
	held := match[:0]
	for _, f := range match {
		_, _, err := f.pin()
		switch {
		case err == nil:
			held = append(held, f)
		case errors.Is(err, os.ErrClosed), errors.Is(err, fs.ErrNotExist): // closed meanwhile, or its file gone
		default:
			p.release(held)
			return nil, err
		}
	}
	return held, nil
}

// orphan keeps held files pinned until their Close: their name is gone.
func (p *Pool) orphan(held []*poolFile) {
	var extra []*poolFile // held twice over, or closed meanwhile
	p.mu.Lock()
	for _, f := range held {
		if f.orphaned || f.closed {
			extra = append(extra, f)
			continue
		}
		f.orphaned = true
		p.unregister(f)
	}
	p.mu.Unlock()
	p.release(extra)
}

// Remove removes name; a pooled file open under it stays usable.
func (p *Pool) Remove(name string) error {
	held, err := p.hold(name)
	if err != nil {
		return err
	}
	err = p.base.Remove(name)
	if err == nil {
		p.orphan(held)
	} else {
		p.release(held)
	}
	return err
}

// RemoveAll removes name and everything below it; pooled files open
// there stay usable.
func (p *Pool) RemoveAll(name string) error {
	held, err := p.hold(name)
	if err != nil {
		return err
	}
	err = p.base.RemoveAll(name)
	p.orphan(held) // some may be gone even when it failed
	return err
}

// Rename renames oldname; pooled files open at or below it follow, and
// those open at or below newname (replaced) stay usable.
func (p *Pool) Rename(oldname, newname string) error {
	replaced, err := p.hold(newname)
	if err != nil {
		return err
	}
	held, err := p.hold(oldname)
	if err != nil {
		p.release(replaced)
		return err
	}
	err = p.base.Rename(oldname, newname)
	if err == nil {
		p.orphan(replaced)
	} else {
		p.release(replaced)
	}
	if err == nil {
		oldc, newc := filepath.Clean(oldname), filepath.Clean(newname)
		p.mu.Lock()
		for _, f := range held {
			if f.closed || f.orphaned {
				continue
			}
			p.unregister(f)
			f.path = newc + strings.TrimPrefix(f.path, oldc)
			p.register(f)
		}
		p.mu.Unlock()
	}
	p.release(held)
	return err
}

// release unpins held files.
func (p *Pool) release(held []*poolFile) {
	for _, f := range held {
		f.unpin(false, false, 0)
	}
}
