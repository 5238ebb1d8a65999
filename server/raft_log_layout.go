package server

import (
	"errors"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/nats-io/nats-server/v2/internal/vfs"
	"github.com/nats-io/nats-server/v2/internal/wal"
)

// Where a stream group's log lives. A group directory made by this server
// holds the log's segment files itself, beside the group's snapshot and
// records (the WAL reads only its segments' names): one directory fewer
// to make, and to fsync, per replica of each stream created. A group
// directory made by an earlier server keeps its log in its "wal"
// subdirectory, and keeps using it: whether that subdirectory exists
// decides. The meta group's log stays in its "wal" subdirectory (one per
// server; its presence tells a wiped store, jetstream_meta_wiped.go).

// groupLogDir is the directory holding the log of the stream group whose
// directory is groupDir. A failure to tell (other than "no such
// directory") is returned: opening an empty log beside an unreadable one
// would forget the replica's votes and acknowledged entries.
func groupLogDir(fsys vfs.FS, groupDir string) (string, error) {
	old := walDir(groupDir)
	fi, err := fsys.Stat(old)
	switch {
	case err == nil && fi.IsDir():
		return old, nil
	case err == nil || errors.Is(err, fs.ErrNotExist):
		return groupDir, nil
	}
	return "", err
}

// openGroupLog opens the log of a stream group (its linked snapshots
// kept as such) in either layout.
func openGroupLog(fsys vfs.FS, groupDir string, syncEvery time.Duration, logf func(string, ...any)) (*walLog, error) {
	logDir, err := groupLogDir(fsys, groupDir)
	if err != nil {
		return nil, err
	}
	return openWALLogAt(fsys, groupDir, logDir, syncEvery, logf, linkedSnapKind{})
}

// hasGroupLog reports whether the group directory holds a log, in
// either layout.
func (js *jetStream) hasGroupLog(groupDir string) bool {
	if js.exists(walDir(groupDir)) {
		return true
	}
	ents, _ := js.fs.ReadDir(groupDir)
	for _, e := range ents {
		if wal.IsSegment(e.Name()) {
			return true
		}
	}
	return false
}

// removeGroupLog removes the log of a group directory durably, in either
// layout (the "wal" subdirectory and segments in the directory itself).
func removeGroupLog(fsys vfs.FS, groupDir string) error {
	if err := vfs.RemoveAllSynced(fsys, walDir(groupDir)); err != nil {
		return err
	}
	return wal.Remove(fsys, groupDir)
}

// raiseGroupTerm is raiseTerm on a stream group's log, in either layout.
func raiseGroupTerm(fsys vfs.FS, groupDir string, term uint64, logf func(string, ...any)) error {
	logDir, err := groupLogDir(fsys, groupDir)
	if err != nil {
		return err
	}
	return raiseTerm(fsys, logDir, term, logf)
}

// walDir is the "wal" subdirectory of a group directory: the meta group's
// log, and a stream group's made by an earlier server.
func walDir(groupDir string) string { return filepath.Join(groupDir, "wal") }
