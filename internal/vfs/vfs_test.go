package vfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func mustWrite(t *testing.T, f File, s string) {
	t.Helper()
	if _, err := f.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
}

func readAll(t *testing.T, fs FS, name string) string {
	t.Helper()
	b, err := ReadFile(fs, name)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return string(b)
}

func TestVFSMemCrashDropsUnsynced(t *testing.T) {
	m := NewMem()
	if err := MkdirAllSynced(m, "/d", 0o750); err != nil {
		t.Fatal(err)
	}
	f, err := m.OpenFile("/d/a", os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, "hello ")
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, "world")
	if got := readAll(t, m, "/d/a"); got != "hello world" {
		t.Fatalf("before crash %q", got)
	}
	// Not durable yet: the file was never made durable by SyncDir.
	m.Crash()
	if _, err := m.Stat("/d/a"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("undurable create survived: %v", err)
	}
	if _, err := f.Write([]byte("x")); !errors.Is(err, ErrCrashed) {
		t.Fatalf("old handle after crash: %v", err)
	}

	f, _ = m.OpenFile("/d/a", os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o640)
	mustWrite(t, f, "hello ")
	f.Sync()
	m.SyncDir("/d")
	mustWrite(t, f, "world")
	m.Crash()
	if got := readAll(t, m, "/d/a"); got != "hello " {
		t.Fatalf("after crash %q", got)
	}
}

func TestVFSMemCrashKeepTorn(t *testing.T) {
	m := NewMem()
	MkdirAllSynced(m, "/d", 0o750)
	f, _ := m.OpenFile("/d/a", os.O_RDWR|os.O_CREATE, 0o640)
	mustWrite(t, f, "abc")
	f.Sync()
	m.SyncDir("/d")
	mustWrite(t, f, "defgh")
	m.CrashKeep(func(name string, n int) int {
		if name != "/d/a" || n != 5 {
			t.Fatalf("keep(%s, %d)", name, n)
		}
		return 2
	})
	if got := readAll(t, m, "/d/a"); got != "abcde" {
		t.Fatalf("torn %q", got)
	}
}

func TestVFSMemRenameAndRemoveDurability(t *testing.T) {
	m := NewMem()
	MkdirAllSynced(m, "/d", 0o750)
	if err := WriteFileAtomic(m, "/d/ck", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	f, _ := m.OpenFile("/d/ck.tmp", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o640)
	mustWrite(t, f, "v2")
	f.Sync()
	f.Close()
	m.Rename("/d/ck.tmp", "/d/ck")
	if got := readAll(t, m, "/d/ck"); got != "v2" {
		t.Fatalf("renamed %q", got)
	}
	m.Crash() // the rename was not made durable
	if got := readAll(t, m, "/d/ck"); got != "v1" {
		t.Fatalf("after crash %q", got)
	}
	m.Remove("/d/ck")
	m.Crash()
	if got := readAll(t, m, "/d/ck"); got != "v1" {
		t.Fatalf("undurable remove: %q", got)
	}
	m.Remove("/d/ck")
	m.SyncDir("/d")
	m.Crash()
	if _, err := m.Stat("/d/ck"); err == nil {
		t.Fatal("durable remove reverted")
	}
	ents, _ := m.ReadDir("/d")
	if len(ents) != 0 {
		t.Fatalf("entries %v", ents)
	}
}

func TestVFSMemTruncateWriteAtFlip(t *testing.T) {
	m := NewMem()
	MkdirAllSynced(m, "/d", 0o750)
	f, _ := m.OpenFile("/d/a", os.O_RDWR|os.O_CREATE, 0o640)
	mustWrite(t, f, "0123456789")
	if _, err := f.WriteAt([]byte("xy"), 3); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(7); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, m, "/d/a"); got != "012xy56" {
		t.Fatalf("got %q", got)
	}
	m.FlipBit("/d/a", 0, 0)
	if got := readAll(t, m, "/d/a"); got != "112xy56" {
		t.Fatalf("flip %q", got)
	}
	fi, _ := f.Stat()
	if fi.Size() != 7 {
		t.Fatal(fi.Size())
	}
	buf := make([]byte, 4)
	if n, err := f.ReadAt(buf, 5); n != 2 || err == nil {
		t.Fatalf("short read %d %v", n, err)
	}
	a, _ := m.OpenFile("/d/a", os.O_WRONLY|os.O_APPEND, 0)
	if _, err := a.WriteAt([]byte("z"), 0); err == nil {
		t.Fatal("WriteAt on O_APPEND handle")
	}
	if _, err := m.OpenFile("/d/a", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640); err == nil {
		t.Fatal("O_EXCL on existing file")
	}
	if _, err := m.OpenFile("/nodir/a", os.O_RDWR|os.O_CREATE, 0o640); err == nil {
		t.Fatal("create in missing dir")
	}
}

func TestVFSMemInjectError(t *testing.T) {
	m := NewMem()
	MkdirAllSynced(m, "/d", 0o750)
	f, _ := m.OpenFile("/d/a", os.O_RDWR|os.O_CREATE, 0o640)
	mustWrite(t, f, "abc")
	f.Sync()
	boom := errors.New("boom")
	m.InjectError(func(op, name string) error {
		if (op == "write" || op == "sync" || op == "rename") && filepath.Base(name) == "a" {
			return boom
		}
		return nil
	})
	if _, err := f.Write([]byte("def")); err != boom {
		t.Fatalf("write: %v", err)
	}
	if err := f.Sync(); err != boom {
		t.Fatalf("sync: %v", err)
	}
	if err := m.Rename("/d/a", "/d/b"); err != boom {
		t.Fatalf("rename: %v", err)
	}
	m.InjectError(nil)
	if got := readAll(t, m, "/d/a"); got != "abc" {
		t.Fatalf("failed ops had effects: %q", got)
	}
}

func TestVFSOS(t *testing.T) {
	dir := t.TempDir()
	fs := Default
	name := filepath.Join(dir, "x")
	if err := WriteFileAtomic(fs, name, []byte("data")); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, fs, name); got != "data" {
		t.Fatal(got)
	}
	f, err := fs.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("D"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := fs.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	ents, err := fs.ReadDir(dir)
	if err != nil || len(ents) != 1 || ents[0].Name() != "x" {
		t.Fatalf("readdir %v %v", ents, err)
	}
	if got := readAll(t, fs, name); got != "Data" {
		t.Fatal(got)
	}
}

// Kill ends the process, not the machine: unsynced bytes and unsynced
// creations survive; the old handles do not.
func TestVFSMemKillKeepsUnsynced(t *testing.T) {
	m := NewMem()
	if err := MkdirAllSynced(m, "/d", 0o750); err != nil {
		t.Fatal(err)
	}
	f, err := m.OpenFile("/d/a", os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, "hello")
	m.Kill()
	if _, err := f.Write([]byte("x")); !errors.Is(err, ErrCrashed) {
		t.Fatalf("a handle from before the kill wrote: %v", err)
	}
	if got := readAll(t, m, "/d/a"); got != "hello" {
		t.Fatalf("after kill %q", got)
	}
	// The model counts what a killed process wrote as durable (it does
	// not follow the page cache past the process): a later power loss
	// keeps it.
	m.Crash()
	if got := readAll(t, m, "/d/a"); got != "hello" {
		t.Fatalf("after kill and crash %q", got)
	}
}

// A directory survives a power loss only once the directory holding it was
// synced, and the files in it with it; MkdirAllSynced syncs each level it
// makes. Kill (the process ends, the machine runs on) keeps it.
func TestVFSMemDirectoryDurability(t *testing.T) {
	m := NewMem()
	if err := m.MkdirAll("/a/b", 0o750); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(m, "/a/b/f", []byte("x")); err != nil {
		t.Fatal(err)
	}
	m.Crash()
	for _, p := range []string{"/a/b/f", "/a/b", "/a"} {
		if _, err := m.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s survived although /a was never synced into /: %v", p, err)
		}
	}
	if err := m.MkdirAll("/a/b", 0o750); err != nil {
		t.Fatal(err)
	}
	m.SyncDir("/") // /a durable, /a/b not yet
	m.Crash()
	if _, err := m.Stat("/a"); err != nil {
		t.Fatalf("/a: %v", err)
	}
	if _, err := m.Stat("/a/b"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("/a/b survived without a sync of /a: %v", err)
	}
	if err := MkdirAllSynced(m, "/a/b/c", 0o750); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(m, "/a/b/c/f", []byte("x")); err != nil {
		t.Fatal(err)
	}
	m.Crash()
	if got := readAll(t, m, "/a/b/c/f"); got != "x" {
		t.Fatalf("after MkdirAllSynced and a crash: %q", got)
	}
	m.MkdirAll("/k", 0o750)
	m.Kill()
	m.Crash()
	if _, err := m.Stat("/k"); err != nil {
		t.Fatalf("a directory made before a kill: %v", err)
	}
}

// A directory removed comes back with what was durable in it after a
// power loss, unless the directory holding it was synced
// (RemoveAllSynced).
func TestVFSMemDirectoryRemovalDurability(t *testing.T) {
	m := NewMem()
	for _, d := range []string{"/s1/a", "/s2/b"} {
		if err := MkdirAllSynced(m, d, 0o750); err != nil {
			t.Fatal(err)
		}
		if err := WriteFileAtomic(m, d+"/meta", []byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	m.RemoveAll("/s1/a")
	if err := RemoveAllSynced(m, "/s2/b"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Stat("/s1/a"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("/s1/a still there before the crash: %v", err)
	}
	m.Crash()
	if got := readAll(t, m, "/s1/a/meta"); got != "/s1/a" {
		t.Fatalf("/s1/a/meta after the crash: %q", got)
	}
	if _, err := m.Stat("/s2/b"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("/s2/b came back: %v", err)
	}
}
