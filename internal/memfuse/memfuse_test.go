//go:build linux

package memfuse

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

func mountT(t *testing.T, dir string, mem *vfs.MemFS) *Mount {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("FUSE not available here: %v", err)
	}
	m, err := New(dir, mem)
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	return m
}

func write(t *testing.T, path, data string, sync bool) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func syncDir(t *testing.T, dir string) {
	t.Helper()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
}

// TestPowerCutKeepsOnlySynced: through the kernel, a file keeps what was
// fsynced, a name what its directory's fsync made durable.
func TestPowerCutKeepsOnlySynced(t *testing.T) {
	dir := t.TempDir()
	mem := vfs.NewMem()
	m := mountT(t, dir, mem)
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	syncDir(t, dir) // a new directory is durable once its parent was synced
	syncDir(t, filepath.Join(dir, "a"))
	f := write(t, filepath.Join(dir, "a", "b", "log"), "synced;", true)
	syncDir(t, filepath.Join(dir, "a", "b"))
	if _, err := f.WriteString("lost"); err != nil {
		t.Fatal(err)
	}
	g := write(t, filepath.Join(dir, "a", "unnamed"), "data", true) // dir never synced
	tmp := filepath.Join(dir, "a", "b", "meta.tmp")
	h := write(t, tmp, "v2", true)
	if err := os.Rename(tmp, filepath.Join(dir, "a", "b", "meta")); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "a", "b", "log"))
	if err != nil || string(got) != "synced;lost" {
		t.Fatalf("before the cut: %q %v", got, err)
	}
	f.Close()
	g.Close()
	h.Close()
	if err := m.Unmount(); err != nil {
		t.Fatal(err)
	}
	mem.Crash()
	m = mountT(t, dir, mem)
	defer m.Unmount()
	got, err = os.ReadFile(filepath.Join(dir, "a", "b", "log"))
	if err != nil || string(got) != "synced;" {
		t.Fatalf("after the cut: %q %v", got, err)
	}
	for _, gone := range []string{"a/unnamed", "a/b/meta", "a/b/meta.tmp"} {
		if _, err := os.Stat(filepath.Join(dir, gone)); !os.IsNotExist(err) {
			t.Fatalf("%s survived a rename/create whose directory was never synced: %v", gone, err)
		}
	}
}

// TestTruncateLinkAndReaddir: the calls a store makes besides writes.
func TestTruncateLinkAndReaddir(t *testing.T) {
	dir := t.TempDir()
	mem := vfs.NewMem()
	m := mountT(t, dir, mem)
	defer m.Unmount()
	p := filepath.Join(dir, "blk")
	f := write(t, p, "0123456789", true)
	if err := f.Truncate(4); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Link(p, filepath.Join(dir, "blk2")); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "blk2"))
	if string(got) != "0123" {
		t.Fatalf("linked copy reads %q", got)
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 2 || ents[0].Name() != "blk" || ents[1].Name() != "blk2" {
		t.Fatalf("readdir: %v %v", ents, err)
	}
	if err := os.WriteFile(p, []byte("xy"), 0o644); err != nil { // O_TRUNC
		t.Fatal(err)
	}
	got, _ = os.ReadFile(filepath.Join(dir, "blk2"))
	if string(got) != "xy" {
		t.Fatalf("a hard link shares its file: %q", got)
	}
}
