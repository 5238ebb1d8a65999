package server

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats-server/v2/internal/store"
	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// A linked snapshot (stream_snapshot.go) names a directory only its own
// server has, so it is expanded into a full one, every message inline,
// when raft sends it to a replica that fell behind. That reads the whole
// stream, so it runs on a goroutine of its own, one per route and group at
// a time like any snapshot transfer (raft_frag.go); raft sends the
// snapshot again if the follower does not answer. A spooled snapshot
// (raft_spool.go) names a file only its own server has: it is sent the
// same way, read from its file.

// snapshotExpander is implemented by state machines whose stored
// snapshots must be expanded before they are sent.
type snapshotExpander interface {
	// expandSnapshot writes data as a self-contained snapshot to a file
	// that has no name (it goes when closed); the caller closes it.
	expandSnapshot(l linkedSnap) (vfs.File, int64, error)
}

// expandSnapshot takes over sending m when group's snapshot needs
// expanding or is spooled; false when m goes out as it is.
func (s *Server) expandSnapshot(r *route, group string, m *raft.Message) bool {
	g := s.raftGroup(group)
	if g == nil || m.Snapshot == nil {
		return false
	}
	sp, spooled := m.Snapshot.Local.(spooledSnap)
	linked, isLinked := m.Snapshot.Local.(linkedSnap)
	ex, ok := g.sm.(snapshotExpander)
	if !spooled && (!ok || !isLinked) {
		return false // full data: sent as it is
	}
	key := r.remote.ID + " " + group
	if _, busy := s.raft.sending.LoadOrStore(key, true); busy {
		return true // the transfer in progress serves the same purpose
	}
	out := *m
	snap := *m.Snapshot
	out.Snapshot = &snap
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.raft.sending.Delete(key)
		var f vfs.File
		var data io.ReaderAt
		var size int64
		var err error
		if spooled {
			f, data, err = sp.open(s.jsFS())
			size = sp.Size
		} else {
			f, size, err = ex.expandSnapshot(linked)
			data = f
		}
		if err != nil {
			s.Warnf("RAFT group %q: snapshot %d not sent: %v", group, snap.Index, err)
			return
		}
		defer f.Close()
		if err := s.sendSnapshotFile(r, group, &out, data, size); err != nil {
			s.Warnf("RAFT group %q: snapshot %d not sent: %v", group, snap.Index, err)
		} else if spooled {
			s.raft.spooledOut.Add(1)
		}
	}()
	return true
}

// sendSnapshotFile sends m with the snapshot data in f (size bytes): in
// pieces read from the file as the route drains, so the whole stream is
// never in memory; in one frame to a peer too old for pieces.
func (s *Server) sendSnapshotFile(r *route, group string, m *raft.Message, f io.ReaderAt, size int64) error {
	if r.remote.Proto < 2 || size <= int64(raftFragSize) {
		if s.raftTooLarge(r, int(min(size, raftFragMaxTotal+1))) {
			return nil
		}
		data := make([]byte, size)
		if _, err := f.ReadAt(data, 0); err != nil {
			return err
		}
		m.Snapshot.Data = data
		s.queueRaftPayload(r, appendRaftPayload(nil, group, m))
		return nil
	}
	// The snapshot's data is the message's last field: encode the rest
	// with no data, then put the data's real length where its empty
	// length went.
	m.Snapshot.Data = nil
	prefix := appendRaftPayload(nil, group, m)
	if prefix[len(prefix)-1] != 0 {
		return errors.New("snapshot data is not the raft message's last field")
	}
	prefix = binary.AppendUvarint(prefix[:len(prefix)-1], uint64(size))
	total := int64(len(prefix)) + size
	if s.raftTooLarge(r, int(min(total, raftFragMaxTotal+1))) {
		return nil
	}
	return s.queueRaftPiecesFrom(r, io.MultiReader(bytes.NewReader(prefix), io.NewSectionReader(f, 0, size)), int(total))
}

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
