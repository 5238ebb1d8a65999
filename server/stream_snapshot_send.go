package server

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/nats-io/nats-server/v2/internal/store"
	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// A linked snapshot (stream_snapshot.go) names a directory only its own
// server has, so it is expanded into a full one, every message inline,
// when raft sends it to a replica that fell behind (raft_snapshot_send.go
// asks the state machine, a snapshotExpander, to do it).

// expandSnapshot reads a linked snapshot's directory through a store
// restored from it in a scratch directory, and writes every message to
// an unnamed file in the group's directory.
func (mset *stream) expandSnapshot(l linkedSnap) (vfs.File, int64, error) {
	mset.mu.Lock()
	groupDir := mset.groupDir
	mset.mu.Unlock()
	fsys := mset.jsa.js.fs
	name := filepath.Join(groupDir, "sending-"+strconv.FormatUint(raftFragIDs.Add(1), 10)+".snap")
	f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return nil, 0, err
	}
	fsys.Remove(name) // open until sent; nothing is left after a crash
	if err := mset.writeExpandedSnapshot(l, groupDir, f); err != nil {
		f.Close()
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

// writeExpandedSnapshot writes l's full form to w.
func (mset *stream) writeExpandedSnapshot(l linkedSnap, groupDir string, w io.Writer) error {
	meta := l.meta
	name := meta.Linked
	scratch := filepath.Join(groupDir, "sending-"+strconv.FormatUint(raftFragIDs.Add(1), 10))
	defer mset.jsa.js.fs.RemoveAll(scratch)
	dir := filepath.Join(scratch, "msgs")
	// Pinned while its files are linked: pruning must not remove them
	// half-way (the scratch directory's links then keep them).
	mset.pins.add(name, 1)
	fs, closeCopy, err := store.OpenLinkedCopy(mset.jsa.js.fs, filepath.Join(groupDir, snapsDir, name), dir)
	mset.pins.add(name, -1)
	if err != nil {
		return err
	}
	defer closeCopy() // a scratch copy: no checkpoint or compaction
	var st StreamState
	fs.FastState(&st)
	lost := lostCount(fs)
	if st.Msgs != meta.Messages || st.LastSeq != meta.Last || (st.Msgs > 0 && st.FirstSeq != meta.First) {
		return fmt.Errorf("linked snapshot %s holds %d messages %d..%d, not %d messages %d..%d",
			name, st.Msgs, st.FirstSeq, st.LastSeq, meta.Messages, meta.First, meta.Last)
	}
	meta.Linked = ""
	bw := bufio.NewWriterSize(w, snapFlushBytes)
	if err := writeFullSnapshot(fs, &meta, st, bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if after := fs.State(); after.Msgs != meta.Messages || lostCount(fs) != lost {
		return fmt.Errorf("linked snapshot %s: %d of %d messages readable", name, after.Msgs, meta.Messages)
	}
	return nil
}

// lostCount is the number of messages a store lists as lost.
func lostCount(st StreamStore) int {
	if l := st.State().Lost; l != nil {
		return len(l.Msgs)
	}
	return 0
}
