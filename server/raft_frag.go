package server

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"sync/atomic"
)

// Raft messages larger than raftFragSize (snapshots) cross a route in
// pieces: "RAFTF <id> <total> <size>\r\n" and size bytes, the pieces of
// one message in order, possibly interleaved with other operations and
// other messages' pieces. The receiver reassembles each id and delivers
// the message when total bytes arrived. So a snapshot is not bound by the
// 1 GiB RAFT frame, and other traffic on the route is not held up behind
// it for the whole transfer.

// raftFragSize is the largest raft message sent in one RAFT frame, and the
// size of the pieces of a larger one. A variable for tests.
var raftFragSize = 8 << 20

const (
	raftFragMaxPiece = 64 << 20 // the largest piece a receiver accepts
	raftFragMaxTotal = 16 << 30 // the largest message a receiver reassembles
	raftFragMaxOpen  = 8        // messages a route reassembles at once
)

var raftFragIDs atomic.Uint64

// raftFrags is a route's reassembly state, used only by its read loop.
type raftFrags map[uint64]*raftFrag

type raftFrag struct {
	buf   []byte
	total int
}

// sendRaftFrags queues payload in pieces when the peer knows RAFTF; it
// reports false when the peer is too old for that.
func (s *Server) sendRaftFrags(r *route, payload []byte) bool {
	if r.remote.Proto < 2 {
		if len(payload) > 1<<30 {
			s.Warnf("Route %s: raft message of %d bytes is too large for the peer's version", r.remote.Name, len(payload))
			return true // dropped: the peer would close the route
		}
		return false
	}
	id := raftFragIDs.Add(1)
	for off := 0; off < len(payload); off += raftFragSize {
		piece := payload[off:min(off+raftFragSize, len(payload))]
		line := fmt.Appendf(make([]byte, 0, len(piece)+64), "RAFTF %d %d %d\r\n", id, len(payload), len(piece))
		line = append(append(line, piece...), "\r\n"...)
		r.c.queueProto(line)
	}
	return true
}

// routeRaftFrag reads one piece and delivers the message it completes.
func (s *Server) routeRaftFrag(r *route, args []byte) error {
	f := bytes.Fields(args)
	if len(f) != 3 {
		return fmt.Errorf("bad RAFTF %q", args)
	}
	id, err1 := strconv.ParseUint(string(f[0]), 10, 64)
	total, err2 := strconv.Atoi(string(f[1]))
	size, err3 := strconv.Atoi(string(f[2]))
	if err1 != nil || err2 != nil || err3 != nil || size < 0 || size > raftFragMaxPiece || total <= 0 || total > raftFragMaxTotal {
		return fmt.Errorf("bad RAFTF %q", args)
	}
	if r.frags == nil {
		r.frags = raftFrags{}
	}
	fr := r.frags[id]
	if fr == nil {
		if len(r.frags) >= raftFragMaxOpen {
			clear(r.frags) // a sender that gave up midway: raft resends
		}
		fr = &raftFrag{buf: make([]byte, 0, total), total: total}
		r.frags[id] = fr
	}
	if fr.total != total || len(fr.buf)+size > total {
		return fmt.Errorf("RAFTF %d: pieces exceed the total %d", id, total)
	}
	start := len(fr.buf)
	fr.buf = fr.buf[:start+size]
	if _, err := io.ReadFull(r.br, fr.buf[start:]); err != nil {
		return err
	}
	var crlf [2]byte
	if _, err := io.ReadFull(r.br, crlf[:]); err != nil {
		return err
	}
	if len(fr.buf) < total {
		return nil
	}
	delete(r.frags, id)
	if err := s.deliverRaft(fr.buf); err != nil {
		s.Debugf("Route %s: bad raft message: %v", r.remote.Name, err)
	}
	return nil
}
