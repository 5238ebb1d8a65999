package server

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// The incarnation record (stream_incarnation.go) is an empty file whose
// name alone says something. Each new replica's group directory gets one,
// and making a file (an inode) is the dearest step of a create on a
// journaling file system, where a hard link only adds a name: 3 µs against
// 60-200 µs on ext4 here, on every server at every create. So the record
// is a hard link to one empty file per server, incarnationSource in the
// raft directory (no group is named so: groups are "S-..." and "_meta_").
// The group directory's owed fsync makes the link durable as it made the
// created file durable. Where a link cannot be made (a file system
// without hard links, the source's link count at its limit) the record is
// created as before.

const incarnationSource = ".incarnation"

// makeEmptyRecord gives name an empty file: a link to the source, else a
// file of its own. It syncs nothing (the caller owes name's directory an
// fsync).
func (js *jetStream) makeEmptyRecord(name string) error {
	src := filepath.Join(js.storeDir, "_raft_", incarnationSource)
	if js.incSource.Load() && js.fs.Link(src, name) == nil {
		return nil
	}
	f, err := js.fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return err
	}
	return f.Close()
}

// ensureIncarnationSource makes the source once (synced, with its
// directory), before the first group directory is made: syncing the raft
// directory then would make that directory's name durable before its
// owed fsyncs ran. A failure leaves records made as files.
func (js *jetStream) ensureIncarnationSource() {
	if js.incSource.Load() {
		return
	}
	raftDir := filepath.Join(js.storeDir, "_raft_")
	src := filepath.Join(raftDir, incarnationSource)
	if _, err := js.fs.Stat(src); err == nil {
		js.incSource.Store(true)
		return
	} else if !errors.Is(err, fs.ErrNotExist) {
		return
	}
	// Two replicas starting at once may both make it: it is empty either way.
	if vfs.WriteFileSynced(js.fs, src) == nil && js.fs.SyncDir(raftDir) == nil {
		js.incSource.Store(true)
	}
}
