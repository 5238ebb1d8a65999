package vfs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/testutil"
)

// osOpen counts this process's descriptors open on files under dir.
func osOpen(t *testing.T, dir string) int {
	return testutil.OpenFiles(t, func(p string) bool { return strings.HasPrefix(p, dir) })
}

// On the OS: with 200 files written, synced and kept by their owners, no
// more than the limit stay open, and every file reads back what was
// written after the budget closed it.
func TestPoolLimitAndReopenOnOS(t *testing.T) {
	dir := t.TempDir()
	p := NewPool(Default, 8)
	files := make([]File, 200)
	for i := range files {
		f, err := p.OpenFile(filepath.Join(dir, fmt.Sprint(i)), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640)
		if err != nil {
			t.Fatal(err)
		}
		files[i] = f
		if _, err := f.WriteAt([]byte(fmt.Sprintf("file %d", i)), 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if n := osOpen(t, dir); n > 8 {
		t.Fatalf("%d files open, limit 8", n)
	}
	for i, f := range files {
		buf := make([]byte, 16)
		n, _ := f.ReadAt(buf, 0)
		if got := string(buf[:n]); got != fmt.Sprintf("file %d", i) {
			t.Fatalf("file %d reads %q", i, got)
		}
		if _, err := f.WriteAt([]byte("!"), int64(n)); err != nil { // writable after a reopen
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if _, open, reopens := p.Stats(); open > 8 || reopens < 190 {
		t.Fatalf("open %d, reopens %d", open, reopens)
	}
	for _, f := range files {
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := osOpen(t, dir); n != 0 {
		t.Fatalf("%d files open after Close", n)
	}
	if _, open, _ := p.Stats(); open != 0 {
		t.Fatalf("pool counts %d open after Close", open)
	}
}

// A file written and not synced stays open over the limit (its fsync must
// go through the descriptor that wrote); once synced it may be closed.
func TestPoolKeepsDirtyFilesOpen(t *testing.T) {
	dir := t.TempDir()
	p := NewPool(Default, 2)
	var files []File
	for i := range 5 {
		f, err := p.OpenFile(filepath.Join(dir, fmt.Sprint(i)), os.O_RDWR|os.O_CREATE, 0o640)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt([]byte("x"), 0)
		files = append(files, f)
	}
	if n := osOpen(t, dir); n != 5 {
		t.Fatalf("%d open: 5 files with unsynced writes must all stay open", n)
	}
	for _, f := range files {
		f.Sync()
	}
	if n := osOpen(t, dir); n > 2 {
		t.Fatalf("%d open after the syncs, limit 2", n)
	}
	for _, f := range files {
		f.Close()
	}
}

// Write keeps its position across a close by the budget.
func TestPoolWritePosition(t *testing.T) {
	dir := t.TempDir()
	p := NewPool(Default, 1)
	a, _ := p.OpenFile(filepath.Join(dir, "a"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o640)
	a.Write([]byte("hello "))
	a.Sync()
	b, _ := p.OpenFile(filepath.Join(dir, "b"), os.O_RDWR|os.O_CREATE, 0o640) // closes a
	if _, open, _ := p.Stats(); open != 1 {
		t.Fatalf("open %d", open)
	}
	a.Write([]byte("world"))
	a.Sync()
	a.Close()
	b.Close()
	if got, _ := os.ReadFile(filepath.Join(dir, "a")); string(got) != "hello world" {
		t.Fatalf("a holds %q", got)
	}
}

// Concurrent writers, readers and syncs on more files than the limit (on
// the in-memory FS, whose crash drops unsynced bytes): every byte reads
// back, a crash keeps what was synced, and the budget holds at the end.
func TestPoolConcurrent(t *testing.T) {
	mem := NewMem()
	if err := MkdirAllSynced(mem, "/d", 0o750); err != nil {
		t.Fatal(err)
	}
	p := NewPool(mem, 4)
	const nf, writes = 16, 200
	files := make([]File, nf)
	for i := range files {
		f, err := p.OpenFile(fmt.Sprintf("/d/%d", i), os.O_RDWR|os.O_CREATE, 0o640)
		if err != nil {
			t.Fatal(err)
		}
		files[i] = f
	}
	if err := p.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range writes {
				f := files[(g+w)%nf]
				rec := []byte{byte(g), byte(w)}
				off := int64(g*writes+w) * 2
				if _, err := f.WriteAt(rec, off); err != nil {
					t.Error(err)
					return
				}
				if w%3 == 0 {
					if err := f.Sync(); err != nil {
						t.Error(err)
						return
					}
				}
				buf := make([]byte, 2)
				if _, err := f.ReadAt(buf, off); err != nil || !bytes.Equal(buf, rec) {
					t.Errorf("read %v %v, wrote %v", buf, err, rec)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, f := range files {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if _, open, _ := p.Stats(); open > 4 {
		t.Fatalf("open %d after everything synced, limit 4", open)
	}
	mem.Crash()
	for g := range 8 {
		for w := range writes {
			data, err := ReadFile(mem, fmt.Sprintf("/d/%d", (g+w)%nf))
			off := (g*writes + w) * 2
			if err != nil || len(data) < off+2 || data[off] != byte(g) || data[off+1] != byte(w) {
				t.Fatalf("after a crash, record %d/%d lost (%v)", g, w, err)
			}
		}
	}
}

func TestPoolClosedFile(t *testing.T) {
	p := NewPool(NewMem(), 1)
	f, _ := p.OpenFile("/x", os.O_RDWR|os.O_CREATE, 0o640)
	f.Close()
	if _, err := f.ReadAt(make([]byte, 1), 0); err == nil {
		t.Fatal("read after Close succeeded")
	}
	if f.Close() == nil {
		t.Fatal("second Close succeeded")
	}
}

// A file the budget closed before a crash of the in-memory FS is not
// opened again: like every handle opened before the crash it fails.
func TestPoolHandleDiesWithCrash(t *testing.T) {
	mem := NewMem()
	mem.MkdirAll("/d", 0o750)
	p := NewPool(mem, 1)
	a, _ := p.OpenFile("/d/a", os.O_RDWR|os.O_CREATE, 0o640)
	a.Sync()
	b, _ := p.OpenFile("/d/b", os.O_RDWR|os.O_CREATE, 0o640) // closes a
	mem.Kill()
	if _, err := a.WriteAt([]byte("x"), 0); err != ErrCrashed {
		t.Fatalf("write through a pre-crash handle closed by the budget: %v, want ErrCrashed", err)
	}
	if _, err := b.WriteAt([]byte("x"), 0); err != ErrCrashed {
		t.Fatalf("write through an open pre-crash handle: %v", err)
	}
}

// evictAll opens and syncs n other files so that every idle file of p
// has been closed by the budget (limit 1).
func evictAll(t *testing.T, p *Pool, dir string) {
	t.Helper()
	f, err := p.OpenFile(filepath.Join(dir, "evictor"), os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func readPooled(t *testing.T, f File, n int) string {
	t.Helper()
	buf := make([]byte, n)
	m, err := f.ReadAt(buf, 0)
	if err != nil && m != n {
		t.Fatalf("read %s: %v", f.Name(), err)
	}
	return string(buf[:m])
}

// The pool follows what happens to the names of its files as a
// descriptor would: a file removed while open (an unnamed scratch file)
// stays readable, a renamed file or directory is opened again at its new
// path, a file replaced by a rename keeps its old content, and RemoveAll
// leaves the files open under it usable.
func TestPoolFollowsNames(t *testing.T) {
	for _, base := range []FS{Default, NewMem()} {
		dir := t.TempDir()
		if _, ok := base.(*MemFS); ok {
			dir = "/pool"
		}
		if err := base.MkdirAll(filepath.Join(dir, "sub"), 0o750); err != nil {
			t.Fatal(err)
		}
		p := NewPool(base, 1)
		open := func(name, data string) File {
			f, err := p.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o640)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt([]byte(data), 0)
			f.Sync()
			return f
		}
		unnamed, moved, inDir, replaced, gone := open("unnamed", "u1"), open("moved", "m1"), open("sub/f", "s1"), open("target", "t1"), open("sub/g", "g1")
		if err := p.Remove(unnamed.Name()); err != nil {
			t.Fatal(err)
		}
		evictAll(t, p, dir)
		if got := readPooled(t, unnamed, 2); got != "u1" {
			t.Fatalf("%T: a removed file still open reads %q", base, got)
		}
		if err := p.Rename(filepath.Join(dir, "moved"), filepath.Join(dir, "moved2")); err != nil {
			t.Fatal(err)
		}
		sub := "sub"
		if base == Default { // MemFS renames no directories
			if err := p.Rename(filepath.Join(dir, "sub"), filepath.Join(dir, "sub2")); err != nil {
				t.Fatal(err)
			}
			sub = "sub2"
		}
		other := open("other", "o1")
		if err := p.Rename(other.Name(), replaced.Name()); err != nil {
			t.Fatal(err)
		}
		evictAll(t, p, dir)
		for f, want := range map[File]string{moved: "m1", inDir: "s1", replaced: "t1", other: "o1", gone: "g1"} {
			if got := readPooled(t, f, 2); got != want {
				t.Fatalf("%T: %s reads %q, want %q", base, f.Name(), got, want)
			}
		}
		if err := p.RemoveAll(filepath.Join(dir, sub)); err != nil {
			t.Fatal(err)
		}
		evictAll(t, p, dir)
		if got := readPooled(t, gone, 2); got != "g1" {
			t.Fatalf("%T: a file open under a removed directory reads %q", base, got)
		}
		for _, f := range []File{unnamed, moved, inDir, replaced, gone, other} {
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if _, open, _ := p.Stats(); open != 0 || len(p.byName) != 0 || len(p.byDir) != 0 {
			t.Fatalf("%T: after every Close: open %d, names %v, dirs %v", base, open, p.byName, p.byDir)
		}
	}
}
