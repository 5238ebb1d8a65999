package wal

import (
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// IsSegment reports whether name is the name of a segment file: the only
// files of a directory a WAL reads, writes or removes (others may share
// it).
func IsSegment(name string) bool {
	_, _, ok := parseSegName(name)
	return ok
}

// Remove removes the log in dir, durably: every segment file, then the
// directory's fsync. Files of other names stay. A dir that does not exist
// holds no log.
func Remove(fsys vfs.FS, dir string) error {
	ents, err := fsys.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	removed := false
	for _, e := range ents {
		if e.IsDir() || !IsSegment(e.Name()) {
			continue
		}
		if err := fsys.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		removed = true
	}
	if !removed {
		return nil
	}
	return fsys.SyncDir(dir)
}
