package server

import (
	"errors"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// testLogDir is the directory holding the raft log of the stream group
// directory gdir on the operating system's file system (either layout).
func testLogDir(t *testing.T, gdir string) string {
	t.Helper()
	d, err := groupLogDir(vfs.Default, gdir)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// groupDirHasLog reports whether the stream group directory gdir on the
// operating system's file system holds a log (either layout).
func groupDirHasLog(gdir string) bool {
	return (&jetStream{fs: vfs.Default}).hasGroupLog(gdir)
}

// firstLogFsync opens the log of the group directory gdir made with the
// fsyncs owed, runs its first fsync (which runs them) and closes it, as
// a new replica's group does before it says or applies anything.
func firstLogFsync(t *testing.T, fsys vfs.FS, gdir string, owed pendingSyncs) {
	t.Helper()
	l, err := openGroupLog(fsys, gdir, 0, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	l.owed = owed
	if err := errors.Join(l.Sync(), l.Close()); err != nil {
		t.Fatal(err)
	}
}
