package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// A snapshot raft sends may be held as a file rather than in memory: a
// spool file it was received into (raft_spool.go), or local state the
// state machine knows how to expand (a stream's linked snapshot). Reading
// the whole file takes time, so it runs on a goroutine of its own, one per
// route and group at a time like any snapshot transfer (raft_frag.go);
// raft sends the snapshot again if the follower does not answer.

// A linked snapshot (stream_snapshot.go) names a directory only its own
// server has, so it is expanded into a full one, every message inline,
// when raft sends it to a replica that fell behind. That reads the whole
// stream, so it runs on a goroutine of its own, one per route and group at
// a time like any snapshot transfer (raft_frag.go); raft sends the
// snapshot again if the follower does not answer. A spooled snapshot
// (raft_spool.go) names a file only its own server has: it is sent the
// same way, read from its file.

// snapshotExpander is implemented by state machines that hold snapshots
// locally (raft.Snapshot.Local, other than a spool file): they must be
// expanded into a full one before they are sent.
type snapshotExpander interface {
	// expandSnapshot writes the snapshot held as local as a
	// self-contained one to a file that has no name (it goes when closed);
	// the caller closes it.
	expandSnapshot(local any) (vfs.File, int64, error)
}

// expandSnapshot takes over sending m when group's snapshot needs
// expanding or is spooled; false when m goes out as it is.
func (s *Server) expandSnapshot(r *route, group string, m *raft.Message) bool {
	g := s.raftGroup(group)
	if g == nil || m.Snapshot == nil {
		return false
	}
	sp, spooled := m.Snapshot.Local.(spooledSnap)
	ex, ok := g.sm.(snapshotExpander)
	if !spooled && (!ok || m.Snapshot.Local == nil) {
		return false // full data: sent as it is
	}
	local := m.Snapshot.Local
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
			f, size, err = ex.expandSnapshot(local)
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
