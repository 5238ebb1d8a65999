package server

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// A group directory records the stream it was made for (its assignment's
// creation time) in the name of an empty file, "incarnation-<unix nanos>":
// the directory's fsync, owed in any case for the log's first segment, makes
// it durable, where a file holding the time needed a write and an fsync
// of its own (a data fsync, the slowest of a create's first-write round).
// Directories made before hold a file "incarnation" with the time in it;
// they are read as before and kept as they are.

const incarnationPrefix = "incarnation-"

// incarnationVerdict is what a group directory's entries say of the
// stream want (the decimal creation time) it is opened for.
type incarnationVerdict int

const (
	incarnationNone   incarnationVerdict = iota // no record: (re)made for want
	incarnationSame                             // made for want: kept
	incarnationOther                            // made for an earlier stream: discarded
	incarnationLegacy                           // an "incarnation" file: its content decides
)

// judgeIncarnation decides from the names in a group directory (pure).
func judgeIncarnation(names []string, want string) incarnationVerdict {
	v := incarnationNone
	for _, n := range names {
		switch {
		case n == incarnationPrefix+want:
			return incarnationSame
		case strings.HasPrefix(n, incarnationPrefix):
			v = incarnationOther
		case n == "incarnation" && v == incarnationNone:
			v = incarnationLegacy
		}
	}
	return v
}

// checkIncarnation keeps a group directory only for the stream it was made
// for: a stream deleted and created again under the same name (while this
// server was away) must not reuse the old log. A directory it makes is not
// synced yet: the fsyncs it owes are returned, for the group's log to run
// with its first (raft_log_pending.go). A directory made from nothing (none
// was there, or an earlier stream's was removed) is a fresh one: it holds
// nothing but the empty log and the record.
func (js *jetStream) checkIncarnation(sa *streamAssignment) (owed pendingSyncs, fresh bool, err error) {
	dir := js.groupDir(sa)
	want := strconv.FormatInt(sa.Created.UnixNano(), 10)
	ents, err := js.fs.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, false, err
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	v := judgeIncarnation(names, want)
	if v == incarnationLegacy {
		// Only a record read and found different names another stream: a
		// read that fails (EIO, no descriptor left) must not discard a log
		// (the replica would forget its votes and acknowledged entries).
		got, err := vfs.ReadFile(js.fs, filepath.Join(dir, "incarnation"))
		switch {
		case err != nil:
			return nil, false, fmt.Errorf("reading the group's incarnation record: %w", err)
		case bytes.Equal(got, []byte(want)):
			v = incarnationSame
		default:
			v = incarnationOther
		}
	}
	switch v {
	case incarnationSame:
		return nil, false, nil
	case incarnationOther:
		js.srv.Noticef("JetStream cluster: discarding the log of an earlier stream named %q", sa.Config.Name)
		if err := js.fs.RemoveAll(dir); err != nil {
			return nil, false, err
		}
		removeLogMark(js.fs, dir)
		names = nil
	}
	owed, err = js.makeGroupDir(dir, incarnationPrefix+want)
	if err == nil && mayBeClaimed(sa) {
		err = js.markOwner(dir) // jetstream_group_name.go; durable with the directory's owed fsync
	}
	return owed, err == nil && len(names) == 0, err
}

// hasIncarnation reports whether the group directory dir records a stream.
func (js *jetStream) hasIncarnation(dir string) bool {
	ents, _ := js.fs.ReadDir(dir)
	for _, e := range ents {
		if n := e.Name(); n == "incarnation" || strings.HasPrefix(n, incarnationPrefix) {
			return true
		}
	}
	return false
}
