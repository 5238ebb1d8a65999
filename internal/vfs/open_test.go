package vfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// The operating system's OpenFile (openOS on Linux) behaves as
// os.OpenFile for what the stores use: creation with its permission bits,
// O_EXCL and missing files reported as fs.ErrExist and fs.ErrNotExist in a
// *os.PathError, O_APPEND writes at the end and refuses WriteAt, reads
// and writes at offsets, and SyncDir on a directory.
func TestOSOpenFileAsOS(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	f, err := Default.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("hello"), 3); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := f.ReadAt(buf, 3); err != nil || string(buf) != "hello" {
		t.Fatalf("read %q %v", buf, err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := os.OpenFile(filepath.Join(dir, "ref"), os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	ref.Close()
	rfi, _ := os.Stat(filepath.Join(dir, "ref"))
	if fi.Mode() != rfi.Mode() || fi.Size() != 8 {
		t.Fatalf("mode %v size %d, os.OpenFile makes mode %v", fi.Mode(), fi.Size(), rfi.Mode())
	}
	var pe *os.PathError
	if _, err := Default.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640); !errors.Is(err, fs.ErrExist) || !errors.As(err, &pe) {
		t.Fatalf("exclusive create over a file: %v", err)
	}
	if _, err := Default.OpenFile(filepath.Join(dir, "none"), os.O_RDONLY, 0); !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) {
		t.Fatalf("open of a missing file: %v", err)
	}
	a, err := Default.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.WriteAt([]byte("x"), 0); err == nil {
		t.Fatal("WriteAt on an O_APPEND file succeeded")
	}
	if _, err := a.Write([]byte("!")); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if b, _ := os.ReadFile(name); string(b) != "\x00\x00\x00hello!" {
		t.Fatalf("content %q", b)
	}
	if err := Default.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	if err := Default.SyncDir(filepath.Join(dir, "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("SyncDir of a missing directory: %v", err)
	}
}
