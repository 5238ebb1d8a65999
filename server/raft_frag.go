package server

import (
	"bytes"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/nats-io/nats-server/v2/internal/routeproto"
)

// Raft messages larger than raftFragSize (snapshots) cross a route in
// pieces: "RAFTF <id> <total> <offset> <size>\r\n", size bytes and CRLF,
// the pieces of one message in order, interleaved with other operations
// and other messages' pieces. A goroutine per message queues its pieces
// only while the route's output is below the stall mark, so heartbeats and
// appends of every group keep flowing beside a transfer and a big one
// never sits whole in the output (where one write would have to carry
// all of it within the write deadline). The receiver reassembles each id,
// in memory or, from spooledMin bytes, in a spool file (raft_spool.go),
// and delivers the message once total bytes arrived; a piece of an id it
// does not know that is not the first is skipped (raft sends again).

// raftFragSize is the largest raft message sent in one RAFT frame, and the
// size of the pieces of a larger one. A variable for tests.
var raftFragSize = 8 << 20

const (
	raftFragMaxPiece = 64 << 20 // the largest piece a receiver accepts
	raftFragMaxTotal = 16 << 30 // the largest message sent or reassembled
	raftFragMaxOpen  = 8        // messages a route reassembles at once
)

var raftFragIDs atomic.Uint64

// raftFrags is a route's reassembly state, used only by its read loop.
type raftFrags struct {
	open  map[uint64]*raftFrag
	order []uint64 // ids by first piece, oldest first
}

type raftFrag struct {
	buf   []byte
	total int
	// spool, for a transfer of spooledMin bytes or more, holds the n bytes
	// received so far instead of buf (raft_spool.go).
	spool *spoolFile
	n     int
}

// have is how many bytes of the message arrived.
func (fr *raftFrag) have() int {
	if fr.spool != nil {
		return fr.n
	}
	return len(fr.buf)
}

// sendRaftFrags hands payload (which it now owns) to a goroutine that
// queues it in pieces; it reports false when the peer is too old to
// reassemble pieces, and the caller sends one frame.
//
// A group sends one snapshot per route at a time and drops another: raft
// resends a snapshot it sees no answer to, and copies of a large one must
// not pile up while the first is still going out.
func (s *Server) sendRaftFrags(r *route, group string, snapshot bool, payload []byte) bool {
	switch {
	case s.raftTooLarge(r, len(payload)):
		return true // dropped
	case r.remote.Proto < 2:
		return false
	}
	key := r.remote.ID + " " + group
	if snapshot {
		if _, busy := s.raft.sending.LoadOrStore(key, true); busy {
			return true // dropped: the transfer in progress serves the same purpose
		}
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if snapshot {
			defer s.raft.sending.Delete(key)
		}
		s.queueRaftPieces(r, payload)
	}()
	return true
}

// raftTooLarge reports (and warns) when a raft message of n bytes cannot
// go to r's peer: it would close the route.
func (s *Server) raftTooLarge(r *route, n int) bool {
	if n > raftFragMaxTotal || r.remote.Proto < 2 && n > 1<<30 {
		s.Warnf("Route %s: raft message of %d bytes is too large to send", r.remote.Name, n)
		return true
	}
	return false
}

// queueRaftPayload queues payload (group and message, appendRaftPayload)
// on r from the caller's goroutine: in pieces when it is large and the
// peer reassembles them, else in one RAFT frame.
func (s *Server) queueRaftPayload(r *route, payload []byte) {
	switch {
	case s.raftTooLarge(r, len(payload)):
	case len(payload) > raftFragSize && r.remote.Proto >= 2:
		s.queueRaftPieces(r, payload)
	default:
		line := fmt.Appendf(make([]byte, 0, len(payload)+32), "RAFT %d\r\n", len(payload))
		r.c.queueProto(append(append(line, payload...), "\r\n"...))
	}
}

// queueRaftPieces queues payload in pieces, each once the route's output
// is below the stall mark.
func (s *Server) queueRaftPieces(r *route, payload []byte) {
	_ = s.queueRaftPiecesFrom(r, bytes.NewReader(payload), len(payload))
}

// queueRaftPiecesFrom queues the total bytes src yields in pieces, each
// read once the route's output is below the stall mark.
func (s *Server) queueRaftPiecesFrom(r *route, src io.Reader, total int) error {
	id := raftFragIDs.Add(1)
	for off := 0; off < total; off += raftFragSize {
		if !s.waitRouteDrained(r.c) {
			return nil
		}
		n := min(raftFragSize, total-off)
		line := fmt.Appendf(make([]byte, 0, n+80), "RAFTF %d %d %d %d\r\n", id, total, off, n)
		frame := line[:len(line)+n]
		if _, err := io.ReadFull(src, frame[len(line):]); err != nil {
			return err
		}
		r.c.queueProto(append(frame, "\r\n"...))
	}
	return nil
}

// waitRouteDrained waits until c's output is below the stall mark; false
// when the connection or the server goes away first.
func (s *Server) waitRouteDrained(c *client) bool {
	for {
		c.mu.Lock()
		if c.closing {
			c.mu.Unlock()
			return false
		}
		if c.out.pending < stallBytes {
			c.mu.Unlock()
			return true
		}
		if c.out.stc == nil {
			c.out.stc = make(chan struct{})
		}
		ch := c.out.stc
		c.mu.Unlock()
		select {
		case <-ch:
		case <-c.out.done:
			return false
		case <-s.done:
			return false
		}
	}
}

// routeRaftFrag reads one piece and delivers the message it completes.
// The first piece decides, from the message's head, whether it is
// reassembled at all (routeRaft's rules) and where: a snapshot of
// spooledMin bytes or more in a spool file, anything else in memory,
// growing as pieces arrive.
func (s *Server) routeRaftFrag(r *route, op *routeproto.Op) error {
	id, total, off, size := op.ID, int(op.Total), int(op.Offset), op.Size
	if off == 0 && r.frags.open[id] == nil {
		if skip, why := s.skipRaftMessage(r, size, total, false); skip {
			if why != "" {
				s.Debugf("Route %s: raft transfer of %d bytes dropped: %s", r.remote.Name, total, why)
			}
			return discardPayload(r.br, size)
		}
	}
	fr := r.frags.get(id, total, off)
	if fr == nil || fr.have() != off {
		if fr != nil {
			r.frags.abort(id) // a piece went missing: raft sends again
		}
		return discardPayload(r.br, size)
	}
	if off == 0 && int64(total) >= spooledMin {
		var err error
		if fr.spool, err = s.createSpool(id); err != nil && total > raftMaxMsg {
			r.frags.abort(id)
			s.Warnf("Route %s: raft transfer of %d bytes dropped: %v", r.remote.Name, total, err)
			return discardPayload(r.br, size)
		} else if err != nil {
			s.Debugf("Route %s: raft transfer of %d bytes reassembled in memory: %v", r.remote.Name, total, err)
		}
	}
	werr, rerr := fr.read(r.br, size)
	if rerr != nil {
		r.frags.abort(id)
		return rerr
	}
	var crlf [2]byte
	if _, err := io.ReadFull(r.br, crlf[:]); err != nil || crlf != [2]byte{'\r', '\n'} {
		return fmt.Errorf("RAFTF %d: bad piece end: %v", id, err)
	}
	if werr != nil { // the piece was read: the route goes on, raft sends again
		r.frags.abort(id)
		s.Warnf("Route %s: raft transfer of %d bytes dropped: %v", r.remote.Name, total, werr)
		return nil
	}
	if fr.have() < total {
		return nil
	}
	r.frags.remove(id)
	var err error
	if fr.spool != nil {
		err = s.deliverSpooled(fr.spool, total)
	} else {
		err = s.deliverRaft(fr.buf, true) // fr.buf is not reused
	}
	if err != nil {
		s.Debugf("Route %s: bad raft message: %v", r.remote.Name, err)
	}
	return nil
}

// read appends the next size bytes of br to the message. A failed write
// to the spool file (werr) still reads the whole piece, so the route's
// stream stays in step; err is a failed read.
func (fr *raftFrag) read(br io.Reader, size int) (werr, err error) {
	if fr.spool != nil {
		w := &spoolWriter{f: fr.spool}
		_, err = io.CopyN(w, br, int64(size))
		fr.n += size
		return w.err, err
	}
	fr.buf, err = appendRead(br, fr.buf, size)
	return nil, err
}

// spoolWriter writes to a spool file until a write fails, and from then on
// only counts what it is given.
type spoolWriter struct {
	f   *spoolFile
	err error
}

func (w *spoolWriter) Write(p []byte) (int, error) {
	if w.err == nil {
		_, w.err = w.f.Write(p)
	}
	return len(p), nil
}

// get returns the reassembly of id, starting one at its first piece
// (offset 0) and evicting the oldest beyond raftFragMaxOpen; nil for a
// later piece of an id it does not hold.
func (fs *raftFrags) get(id uint64, total, off int) *raftFrag {
	if fr := fs.open[id]; fr != nil {
		if fr.total != total {
			return nil
		}
		return fr
	}
	if off != 0 {
		return nil
	}
	if fs.open == nil {
		fs.open = map[uint64]*raftFrag{}
	}
	if len(fs.order) >= raftFragMaxOpen {
		fs.abort(fs.order[0])
	}
	fr := &raftFrag{total: total} // its buffer grows as pieces arrive
	fs.open[id] = fr
	fs.order = append(fs.order, id)
	return fr
}

// abort forgets the reassembly of id and deletes its spool file.
func (fs *raftFrags) abort(id uint64) {
	if fr := fs.open[id]; fr != nil && fr.spool != nil {
		fr.spool.discard()
	}
	fs.remove(id)
}

// abortAll aborts every reassembly (the route closed).
func (fs *raftFrags) abortAll() {
	for len(fs.order) > 0 {
		fs.abort(fs.order[0])
	}
}

// remove forgets the reassembly of id (its spool file is the caller's).
func (fs *raftFrags) remove(id uint64) {
	delete(fs.open, id)
	for i, x := range fs.order {
		if x == id {
			fs.order = append(fs.order[:i], fs.order[i+1:]...)
			return
		}
	}
}
