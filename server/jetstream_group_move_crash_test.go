package server

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// moveCrashFS stops a process at one step of a group directory's move to
// its unambiguous name (claimGroupDir: the log mark's rename, the
// directory's, the sync of _raft_): from that step on, as after kill -9,
// nothing reaches the disk, neither that operation nor any later one.
type moveCrashFS struct {
	vfs.FS
	old     string // the group directory's old name
	crashAt int    // moveStep* the crash comes before
	mu      sync.Mutex
	step    int // the steps done
	dead    bool
}

const (
	moveStepMark = iota + 1 // the log mark's rename
	moveStepDir             // the directory's rename
	moveStepSync            // the sync of _raft_
	moveStepNone            // after the sync: the move is complete
)

var errMoveCrashed = errors.New("the process crashed (test)")

// do runs op, the move's step (0 for any other operation), unless the
// process crashed before it.
func (f *moveCrashFS) do(step int, op func() error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if step == f.crashAt {
		f.dead = true
	}
	if f.dead {
		return errMoveCrashed
	}
	if step != 0 {
		f.step = step
	}
	return op()
}

// kill crashes the process now: nothing reaches the disk from then on.
func (f *moveCrashFS) kill() {
	f.mu.Lock()
	f.dead = true
	f.mu.Unlock()
}

func (f *moveCrashFS) crashed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dead || f.step == moveStepSync
}

func (f *moveCrashFS) Rename(oldname, newname string) error {
	step := 0
	switch filepath.Clean(oldname) {
	case logMarkPath(f.old):
		step = moveStepMark
	case f.old:
		step = moveStepDir
	}
	return f.do(step, func() error { return f.FS.Rename(oldname, newname) })
}

func (f *moveCrashFS) SyncDir(dir string) error {
	step := 0
	f.mu.Lock()
	if f.step == moveStepDir && filepath.Clean(dir) == filepath.Dir(f.old) {
		step = moveStepSync
	}
	f.mu.Unlock()
	return f.do(step, func() error { return f.FS.SyncDir(dir) })
}

func (f *moveCrashFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	var file vfs.File
	err := f.do(0, func() (err error) { file, err = f.FS.OpenFile(name, flag, perm); return err })
	if err != nil {
		return nil, err
	}
	return &moveCrashFile{File: file, fs: f}, nil
}

func (f *moveCrashFS) Remove(name string) error {
	return f.do(0, func() error { return f.FS.Remove(name) })
}
func (f *moveCrashFS) RemoveAll(name string) error {
	return f.do(0, func() error { return f.FS.RemoveAll(name) })
}
func (f *moveCrashFS) Link(o, n string) error {
	return f.do(0, func() error { return f.FS.Link(o, n) })
}
func (f *moveCrashFS) MkdirAll(dir string, perm os.FileMode) error {
	return f.do(0, func() error { return f.FS.MkdirAll(dir, perm) })
}

// moveCrashFile is a file of a moveCrashFS: nothing is written once the
// process crashed.
type moveCrashFile struct {
	vfs.File
	fs *moveCrashFS
}

func (h *moveCrashFile) WriteAt(p []byte, off int64) (n int, err error) {
	err = h.fs.do(0, func() (err error) { n, err = h.File.WriteAt(p, off); return err })
	return n, err
}
func (h *moveCrashFile) Write(p []byte) (n int, err error) {
	err = h.fs.do(0, func() (err error) { n, err = h.File.Write(p); return err })
	return n, err
}
func (h *moveCrashFile) Sync() error { return h.fs.do(0, h.File.Sync) }
func (h *moveCrashFile) Truncate(size int64) error {
	return h.fs.do(0, func() error { return h.File.Truncate(size) })
}

// TestJetStreamClusterGroupDirMoveCrash: every server crashes at the same
// step of moving a group directory an older server left under the old
// name S-team-a-x to the new one (before the log mark's rename, between
// the two renames, before the sync that makes them durable, after it);
// for the renames not yet synced, a power loss may also keep either
// without the other. Every server then starts again on its own disk: the
// stream holds every acknowledged message on every replica (none came
// from a replica that kept its log), its log under the new name, and
// takes new ones.
func TestJetStreamClusterGroupDirMoveCrash(t *testing.T) {
	cases := []struct {
		name    string
		crashAt int
		undo    string // "mark" or "dir": that rename was not durable
	}{
		{"before the mark", moveStepMark, ""},
		{"between the renames", moveStepDir, ""},
		{"before the sync", moveStepSync, ""},
		{"before the sync, only the directory durable", moveStepSync, "mark"},
		{"before the sync, only the mark durable", moveStepSync, "dir"},
		{"after the sync", moveStepNone, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, a, dirs, newName, oldName := stoppedWithOldGroupDir(t)
			fss := make([]*moveCrashFS, len(c.servers))
			for i, d := range dirs {
				fss[i] = &moveCrashFS{FS: vfs.Default, old: filepath.Join(d, oldName), crashAt: tc.crashAt}
				c.opts[i].fsys = fss[i]
			}
			for i := range c.servers {
				s, err := NewServer(c.opts[i])
				if err != nil {
					t.Fatal(err)
				}
				s.SetLogger(&noticeLog{}, false, false)
				s.Start()
				t.Cleanup(s.Shutdown)
				c.servers[i] = s
			}
			waitFor(t, 20*time.Second, "every server crashed moving the directory", func() bool {
				for _, f := range fss {
					if !f.crashed() {
						return false
					}
				}
				return true
			})
			for i, s := range c.servers {
				s.Shutdown()
				if fss[i].step != tc.crashAt-1 {
					t.Fatalf("%s crashed after step %d of the move, want %d", s.Name(), fss[i].step, tc.crashAt-1)
				}
				c.opts[i].fsys = nil
				switch tc.undo {
				case "mark":
					os.Rename(filepath.Join(dirs[i], newName+".logmark"), filepath.Join(dirs[i], oldName+".logmark"))
				case "dir":
					os.Rename(filepath.Join(dirs[i], newName), filepath.Join(dirs[i], oldName))
				}
			}
			c.startAllLogged(t)
			a.checkHolds(t, c)
			for _, d := range dirs {
				if exists(filepath.Join(d, oldName)) || !groupDirHasLog(filepath.Join(d, newName)) {
					t.Fatalf("%s: the group directory was not moved", d)
				}
			}
			js := a.connect(t, c)
			a.publish(t, js, 3)
			a.checkHolds(t, c)
		})
	}
}
