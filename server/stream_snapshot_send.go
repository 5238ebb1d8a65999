package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/tern-mq/nats-server/internal/raft"
	"github.com/tern-mq/nats-server/internal/vfs"
)

// A linked snapshot (stream_snapshot.go) names a directory only its own
// server has, so it is expanded into a full one, every message inline,
// when raft sends it to a replica that fell behind. That reads the whole
// stream, so it runs on a goroutine of its own, one per route and group at
// a time like any snapshot transfer (raft_frag.go); raft sends the
// snapshot again if the follower does not answer.

// snapshotExpander is implemented by state machines whose stored
// snapshots must be expanded before they are sent.
type snapshotExpander interface {
	// expandSnapshot returns data as a self-contained snapshot, or nil
	// when it already is one.
	expandSnapshot(data []byte) ([]byte, error)
}

// expandSnapshot takes over sending m when group's snapshot needs
// expanding; false when m goes out as it is.
func (s *Server) expandSnapshot(r *route, group string, m *raft.Message) bool {
	g := s.raftGroup(group)
	if g == nil || m.Snapshot == nil {
		return false
	}
	ex, ok := g.sm.(snapshotExpander)
	if !ok || !isLinkedSnapshot(m.Snapshot.Data) {
		return false
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
		data, err := ex.expandSnapshot(snap.Data)
		if err != nil {
			s.Warnf("RAFT group %q: snapshot %d not sent: %v", group, snap.Index, err)
			return
		}
		snap.Data = data
		s.queueRaftPayload(r, appendRaftPayload(nil, group, &out))
	}()
	return true
}

// isLinkedSnapshot reports whether data is a stream snapshot whose
// messages are in a snapshot directory.
func isLinkedSnapshot(data []byte) bool {
	r := &raftReader{b: data}
	return string(r.bytes()) == linkedSnapTag && r.err == nil
}

// expandSnapshot reads a linked snapshot's directory through a store
// restored from it in a scratch directory, and encodes every message.
func (mset *stream) expandSnapshot(data []byte) ([]byte, error) {
	meta, _, err := decodeSnapMeta(data)
	if err != nil {
		return nil, err
	}
	if meta.Linked == "" {
		return data, nil
	}
	name := meta.Linked
	mset.mu.Lock()
	groupDir := mset.groupDir
	mset.mu.Unlock()
	scratch := filepath.Join(groupDir, "sending-"+strconv.FormatUint(raftFragIDs.Add(1), 10))
	defer os.RemoveAll(scratch)
	dir := filepath.Join(scratch, "msgs")
	// Pinned while its files are linked: pruning must not remove them
	// half-way (the scratch directory's links then keep them).
	mset.pins.add(name, 1)
	err = restoreFileSnapshot(vfs.Default, filepath.Join(groupDir, snapsDir, name), dir)
	mset.pins.add(name, -1)
	if err != nil {
		return nil, err
	}
	fs, err := newFileStore(vfs.Default, dir, FileStoreConfig{Logf: func(string, ...any) {}}, StoreLimits{})
	if err != nil {
		return nil, err
	}
	defer fs.closeUnsynced() // a scratch copy: no checkpoint or compaction
	fs.markShared()
	var st StreamState
	fs.FastState(&st)
	lost := lostCount(fs)
	if st.Msgs != meta.Messages || st.LastSeq != meta.Last || (st.Msgs > 0 && st.FirstSeq != meta.First) {
		return nil, fmt.Errorf("linked snapshot %s holds %d messages %d..%d, not %d messages %d..%d",
			name, st.Msgs, st.FirstSeq, st.LastSeq, meta.Messages, meta.First, meta.Last)
	}
	meta.Linked = ""
	full, err := fullSnapshot(fs, &meta, st)()
	if err != nil {
		return nil, err
	}
	if after := fs.State(); after.Msgs != meta.Messages || lostCount(fs) != lost {
		return nil, fmt.Errorf("linked snapshot %s: %d of %d messages readable", name, after.Msgs, meta.Messages)
	}
	return full, nil
}

// lostCount is the number of messages a store lists as lost.
func lostCount(st StreamStore) int {
	if l := st.State().Lost; l != nil {
		return len(l.Msgs)
	}
	return 0
}
