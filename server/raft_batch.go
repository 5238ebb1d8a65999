package server

import (
	"encoding/binary"
	"errors"

	"github.com/nats-io/nats-server/v2/internal/lattrace"
	"github.com/nats-io/nats-server/v2/internal/raft"
)

// Coalesced raft traffic (route protocol 11): the raft messages a server
// queues for a peer between two writes of that route leave in one RAFTB
// frame instead of one RAFT frame each, so the heartbeats of every group
// in a tick cross as a few frames: one lock of the route, one control
// line and one parse per frame, not per message. The payload is
//
//	uvarint from, uvarint to               the sender's and the receiver's
//	                                       raft peer ids, once per frame
//	then records, each:
//	uvarint len, group name                the group
//	uvarint len, message                   encodeRaftMsg without the ids
//
// The frame closes when the route writes (outbuf_batch.go): no message
// waits for a timer; an idle route sends a lone message at once, a busy
// one larger frames. Snapshots and messages of raftBatchRecordMax bytes
// or more go as RAFT (or RAFTF) frames as before, in order with the
// records queued before them. A peer before 11 gets RAFT frames.

// routeProtoRaftBatch is the first route protocol that reads RAFTB.
const routeProtoRaftBatch = 11

const (
	// raftBatchMax bounds a RAFTB payload; raftBatchLine's digits hold it.
	raftBatchMax = 1 << 20
	// raftBatchRecordMax bounds a message that goes in a frame with
	// others (its encoding's bound, encodedRaftMsgSize, is below it).
	raftBatchRecordMax = 64 << 10
)

var errBadRaftBatch = errors.New("malformed RAFTB frame")

// batchesRaftTo tells whether raft messages go to r's peer in RAFTB
// frames: both speak 11 (Options.routeProto stands for an older server in
// tests).
func (s *Server) batchesRaftTo(r *route) bool {
	own := s.getOpts().routeProto
	return r.remote.Proto >= routeProtoRaftBatch && (own == 0 || own >= routeProtoRaftBatch)
}

// sendBatched queues m for r's peer as a record of the route's open RAFTB
// frame; false when m is too large for one (it goes as a RAFT frame). A
// record finding more than max_pending bytes queued on the route (the
// peer stopped reading) is dropped, as raft messages may be: raft sends
// it again, and a stalled route holds no more than that.
func (t *raftTransport) sendBatched(r *route, m *raft.Message) bool {
	if encodedRaftMsgSize(m) > raftBatchRecordMax {
		return false
	}
	rec := t.appendRaftRecord(m)
	c := r.c
	c.mu.Lock()
	if c.closing || int64(c.out.pending) > t.s.maxPending.Load() {
		c.mu.Unlock()
		t.s.raft.msgs.batchDropped.Add(1)
		return true
	}
	opened := c.out.putRaftRecord(m.From, m.To, m.Type, rec)
	c.mu.Unlock()
	c.out.signal()
	if opened {
		t.s.raft.msgs.noteFrameSent(frameRAFTB)
		r.raftOut.frames.Add(1)
	}
	r.raftOut.records.Add(1)
	t.s.raft.msgs.noteSent(m.Type)
	lattrace.Mark("send", int(m.Type)*1000+len(m.Entries))
	return true
}

// appendRaftRecord encodes m as a record of t's group in t.buf (reused
// by the group's goroutine) and returns it.
func (t *raftTransport) appendRaftRecord(m *raft.Message) []byte {
	pre := len(t.group) + 2*binary.MaxVarintLen64
	need := pre + encodedRaftMsgSize(m)
	if cap(t.buf) < need {
		t.buf = make([]byte, 0, need)
	}
	full := t.buf[:cap(t.buf)]
	msg := encodeRaftRecordMsg(full[pre:pre], m) // within the bound: in place
	start := pre - uvarintLen(uint64(len(msg))) - len(t.group) - uvarintLen(uint64(len(t.group)))
	head := binary.AppendUvarint(full[start:start], uint64(len(t.group)))
	head = append(head, t.group...)
	binary.AppendUvarint(head, uint64(len(msg)))
	return full[start : pre+len(msg)]
}

// uvarintLen is the length of v's uvarint encoding.
func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// encodeRaftRecordMsg appends m's encoding without its peer ids.
func encodeRaftRecordMsg(b []byte, m *raft.Message) []byte {
	return encodeRaftMsgBody(append(b, raftCodecVersion, byte(m.Type)), m)
}

// raftBatchRecords calls each with every record of a RAFTB payload, in
// order: its group's name and its message (which does not keep payload's
// memory: a message with entries or a snapshot gets a copy of its bytes).
// A payload whose structure is malformed gives errBadRaftBatch (the route
// closes); a record whose message does not decode is passed with its
// error (dropped, as a bad RAFT message is).
func raftBatchRecords(payload []byte, each func(group []byte, m raft.Message, size int, err error)) error {
	r := raftReader{b: payload}
	from, to := raft.ID(r.uvarint()), raft.ID(r.uvarint())
	if r.err != nil {
		return errBadRaftBatch
	}
	for len(r.b) > 0 {
		group := r.view()
		msg := r.view()
		if r.err != nil || len(group) == 0 || len(msg) == 0 {
			return errBadRaftBatch
		}
		m, err := decodeRaftRecordMsg(msg, from, to)
		each(group, m, len(group)+len(msg), err)
	}
	return nil
}

// decodeRaftRecordMsg decodes a record's message (encodeRaftRecordMsg),
// sent by peer from to peer to; the message does not keep b.
func decodeRaftRecordMsg(b []byte, from, to raft.ID) (m raft.Message, err error) {
	if raftMsgCarriesData(b, 5) {
		b = append([]byte(nil), b...)
	}
	r := raftReader{b: b}
	if r.byte() != raftCodecVersion {
		return m, errBadRaftMsg
	}
	m.Type, m.From, m.To = raft.MessageType(r.byte()), from, to
	if err := decodeRaftMsgBody(&r, &m); err != nil {
		return m, err
	}
	if m.Snapshot != nil {
		m.Snapshot.Data = r.view()
	}
	return m, r.err
}
