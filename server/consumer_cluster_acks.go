package server

import (
	cstate "github.com/nats-io/nats-server/v2/internal/consumer"
)

// A replicated consumer's acks are log entries, and a client acking every
// message sends many in one read: the plain +ACKs (no reply) a client
// read brings for a consumer this server leads wait in the client's read
// batch hook (client.go readBatchHook) and are proposed at the end of the
// read as one OpAcks entry per consumer, which applies as that many OpAck
// entries would. Any other ack of the same consumer (+NAK, +TERM, +WPI,
// +NXT, an AckSync) proposes the held acks first, so a consumer's acks
// enter the log in the order the client sent them.

// ackBatchMax bounds the acks of one OpAcks entry (a full batch is
// proposed at once, the read goes on with a new one).
const ackBatchMax = 1024

// heldAcks are a client's acks for one consumer, not proposed yet.
type heldAcks struct {
	o    *consumer
	seqs []uint64
}

// leaderAcks is a client's held acks: its read batch hook (read loop only).
type leaderAcks struct {
	held []heldAcks
}

// batchableAck reports whether an ack of kind with reply may wait for the
// end of c's read (the caller holds o.mset.mu): a plain +ACK, from a
// client's read loop, to a consumer this server leads that samples no
// acks (a sample is taken for one ack entry).
func batchableAck(c *client, o *consumer, kind cstate.AckKind, reply string) bool {
	return c != nil && c.route == nil && kind == cstate.AckAck && reply == "" &&
		o.lead != nil && o.cfg.SampleFrequency == ""
}

// holdAckLocked holds an ack of seq for o until the end of c's read
// (the caller holds o.mset.mu); a full batch is proposed now.
func holdAckLocked(c *client, o *consumer, seq uint64) {
	h := readHook[leaderAcks](c)
	i := h.index(o)
	if i < 0 {
		h.held = append(h.held, heldAcks{o: o})
		i = len(h.held) - 1
	}
	h.held[i].seqs = append(h.held[i].seqs, seq)
	if len(h.held[i].seqs) >= ackBatchMax {
		o.proposeAcksLocked(h.held[i].seqs)
		h.held[i].seqs = h.held[i].seqs[:0]
	}
}

// proposeHeldAcksLocked proposes the acks c holds for o, before another
// ack of o (the caller holds o.mset.mu).
func proposeHeldAcksLocked(c *client, o *consumer) {
	if c == nil || c.route != nil {
		return
	}
	var h *leaderAcks
	for _, x := range c.readHooks {
		if la, ok := x.(*leaderAcks); ok {
			h = la
		}
	}
	if h == nil {
		return // this client never held an ack
	}
	if i := h.index(o); i >= 0 && len(h.held[i].seqs) > 0 {
		o.proposeAcksLocked(h.held[i].seqs)
		h.held[i].seqs = h.held[i].seqs[:0]
	}
}

func (h *leaderAcks) index(o *consumer) int {
	for i := range h.held {
		if h.held[i].o == o {
			return i
		}
	}
	return -1
}

// readBatchEnd proposes every consumer's held acks.
func (h *leaderAcks) readBatchEnd(*client) {
	if len(h.held) == 0 {
		return
	}
	for i := range h.held {
		o, seqs := h.held[i].o, h.held[i].seqs
		if len(seqs) == 0 {
			continue
		}
		o.mset.mu.Lock()
		o.proposeAcksLocked(seqs)
		o.mset.mu.Unlock()
		o.flushOut()
	}
	clear(h.held)
	h.held = h.held[:0]
}

// proposeAcksLocked proposes acks of seqs as one entry (one ack as an
// OpAck entry); lost when o no longer leads, as a single ack would be
// (the client's acks go to the new leader when they are redelivered).
func (o *consumer) proposeAcksLocked(seqs []uint64) {
	if o.lead == nil || o.closed || len(seqs) == 0 {
		return
	}
	ts := o.now().UnixNano()
	if len(seqs) == 1 || !o.mset.replicasSpeakLocked(routeProtoAcks) {
		for _, seq := range seqs { // one entry each, as an older replica applies them
			o.proposeLocked(&cstate.Entry{Op: cstate.OpAck, TS: ts, Seq: seq}, "", 0)
		}
		return
	}
	o.proposeLocked(&cstate.Entry{Op: cstate.OpAcks, TS: ts, Seqs: seqs}, "", 0)
}

// routeProtoAcks is the route protocol of servers that apply OpAcks.
const routeProtoAcks = 5

// replicasSpeakLocked reports whether every other replica of the stream
// is connected and speaks route protocol proto or later, so an entry that
// needs it is applied alike everywhere (during a rolling upgrade an older
// replica would skip it). The caller holds mset.mu; it reads the routes
// without their lock.
func (mset *stream) replicasSpeakLocked(proto int) bool {
	s, jc := mset.jsa.js.srv, mset.jsa.js.cluster
	o := s.getOpts()
	if jc == nil || o.raftHost != nil { // a host (the simulator) runs one version
		return true
	}
	sa := jc.assignment(mset.jsa.acc.Name, mset.name)
	if sa == nil {
		return false
	}
	if own := o.routeProto; own != 0 && own < proto { // a test's stand-in for an older server
		return false
	}
	for _, p := range sa.Peers {
		if p == s.Name() {
			continue
		}
		if r := s.routeForPeer(raftID(p)); r == nil || r.remote.Proto < proto {
			return false
		}
	}
	return true
}
