package vfs

import (
	"os"
	"path/filepath"
	"testing"
)

// The OS and the in-memory FS agree on what JetStream relies on: a file
// removed while open stays readable through its handle (an unnamed file),
// a hard link shares writes, RemoveAll removes a tree, MkdirAll makes
// every parent and ReadDir lists files and directories by name.
func TestVFSBothAgree(t *testing.T) {
	for name, mk := range map[string]func(t *testing.T) (FS, string){
		"os":  func(t *testing.T) (FS, string) { return Default, t.TempDir() },
		"mem": func(t *testing.T) (FS, string) { return NewMem(), "/root" },
	} {
		t.Run(name, func(t *testing.T) {
			fs, root := mk(t)
			sub := filepath.Join(root, "a", "b")
			if err := fs.MkdirAll(sub, 0o750); err != nil {
				t.Fatal(err)
			}
			tmp := filepath.Join(sub, "unnamed")
			f, err := fs.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := fs.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640); err == nil {
				t.Fatal("O_EXCL opened an existing file")
			}
			if err := fs.Remove(tmp); err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write([]byte("kept")); err != nil {
				t.Fatal(err)
			}
			if fi, err := f.Stat(); err != nil || fi.Size() != 4 {
				t.Fatalf("stat of the open unnamed file: %v %v", fi, err)
			}
			buf := make([]byte, 4)
			if _, err := f.ReadAt(buf, 0); err != nil || string(buf) != "kept" {
				t.Fatalf("read %q %v", buf, err)
			}
			f.Close()
			orig, link := filepath.Join(sub, "orig"), filepath.Join(root, "a", "link")
			if err := WriteFileSynced(fs, orig, []byte("one")); err != nil {
				t.Fatal(err)
			}
			if err := fs.Link(orig, link); err != nil {
				t.Fatal(err)
			}
			g, err := fs.OpenFile(link, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			g.WriteAt([]byte("ONE"), 0)
			g.Close()
			if b, err := ReadFile(fs, orig); err != nil || string(b) != "ONE" {
				t.Fatalf("through the other name: %q %v", b, err)
			}
			ents, err := fs.ReadDir(filepath.Join(root, "a"))
			if err != nil || len(ents) != 2 || ents[0].Name() != "b" || !ents[0].IsDir() || ents[1].Name() != "link" {
				t.Fatalf("readdir: %v %v", ents, err)
			}
			if err := fs.RemoveAll(filepath.Join(root, "a")); err != nil {
				t.Fatal(err)
			}
			if _, err := fs.Stat(orig); !os.IsNotExist(err) {
				t.Fatalf("after RemoveAll: %v", err)
			}
			if err := fs.RemoveAll(filepath.Join(root, "a")); err != nil {
				t.Fatalf("RemoveAll of nothing: %v", err)
			}
		})
	}
}
