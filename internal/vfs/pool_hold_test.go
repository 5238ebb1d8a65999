package vfs

import (
	"errors"
	"os"
	"testing"
)

// TestPoolRenameOverFileThatCannotReopen: a file the budget closed, whose
// reopen fails while a Rename would replace its name, makes the Rename
// fail; before, the Rename went ahead without holding it, and once opens
// worked again its handle reopened the replacing file and read its
// content (found by review).
func TestPoolRenameOverFileThatCannotReopen(t *testing.T) {
	m := NewMem()
	if err := m.MkdirAll("/d", 0o750); err != nil {
		t.Fatal(err)
	}
	p := NewPool(m, 1)
	old, err := p.OpenFile("/d/x", os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.WriteAt([]byte("old"), 0); err != nil {
		t.Fatal(err)
	}
	if err := old.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileSynced(p, "/d/x.tmp", []byte("new")); err != nil { // closes old (budget 1)
		t.Fatal(err)
	}
	fail := true
	m.InjectError(func(op, name string) error {
		if fail && op == "open" && name == "/d/x" {
			return errors.New("EMFILE")
		}
		return nil
	})
	if err := p.Rename("/d/x.tmp", "/d/x"); err == nil {
		t.Fatal("rename over a file that could not be held succeeded")
	}
	fail = false
	buf := make([]byte, 3)
	n, err := old.ReadAt(buf, 0)
	if err != nil || string(buf[:n]) != "old" {
		t.Fatalf("the handle opened on /d/x reads %q, %v; want its own \"old\"", buf[:n], err)
	}
	if err := p.Rename("/d/x.tmp", "/d/x"); err != nil {
		t.Fatalf("rename once opens work: %v", err)
	}
	if n, err := old.ReadAt(buf, 0); err != nil || string(buf[:n]) != "old" {
		t.Fatalf("after the rename the old handle reads %q, %v", buf[:n], err)
	}
}
