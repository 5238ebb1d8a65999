package server

import (
	"bytes"
	"strings"

	cstate "github.com/nats-io/nats-server/v2/internal/consumer"
)

// ackEntry turns an ack message into the entry it proposes; ok is false
// for bodies nats-server ignores.
func ackEntry(a *cstate.AckSubject, body []byte) (e cstate.Entry, kind cstate.AckKind, arg []byte, ok bool) {
	kind, arg = cstate.ParseAckBody(body)
	e = cstate.Entry{Seq: a.SSeq, CSeq: a.CSeq}
	switch kind {
	case cstate.AckAck, cstate.AckNext:
		e.Op = cstate.OpAck
	case cstate.AckNak:
		e.Op = cstate.OpNak
		if d, ok := cstate.ParseNakDelay(arg); ok {
			e.Delay = int64(d)
		}
	case cstate.AckProgress:
		e.Op = cstate.OpProgress
	case cstate.AckTerm:
		e.Op, e.Text = cstate.OpTerm, string(arg)
	default:
		return e, kind, nil, false
	}
	return e, kind, arg, true
}

// readWake is the wake set of c's read loop when the ack came from a
// client's read (deliveries it lets through are sent when that read ends),
// or nil (woken at once): internal publishers have no read loop.
func readWake(c *client) map[*client]struct{} {
	if c == nil || c.route != nil {
		return nil
	}
	return c.pcd
}

// ackMsg handles a message on $JS.ACK.<stream>.>: the ack is applied at
// once (this server's "log"), then whatever it freed is delivered. An ack
// that asked for a reply (AckSync) is answered only after the apply and,
// for a durable consumer of a file stream, after the state is on disk.
func (mset *stream) ackMsg(_ *subscription, c *client, _ *Account, subject, reply string, _, msg []byte) {
	a, ok := cstate.ParseAckSubject(subject)
	if !ok || a.V2 || a.Stream != mset.name {
		return
	}
	e, kind, arg, ok := ackEntry(&a, msg)
	if !ok {
		return
	}
	mset.mu.Lock()
	o := mset.consumers[a.Consumer]
	if o == nil || o.closed || o.cfg.AckPolicy == AckFlowControl { // acked by its flow control answers only
		mset.mu.Unlock()
		return
	}
	if o.viaLog() { // proposed; applied (and an AckSync answered) on every replica later
		if batchableAck(c, o, kind, reply) { // proposed with the read's other acks (consumer_cluster_acks.go)
			holdAckLocked(c, o, e.Seq)
			mset.mu.Unlock()
			return
		}
		proposeHeldAcksLocked(c, o)
		o.queueOutLocked(o.ackLeaderLocked(&e, kind, strings.Clone(reply), arg))
		mset.mu.Unlock()
		o.flushOut()
		return
	}
	e.TS = o.now().UnixNano()
	out := o.applyLocked(&e)
	if kind == cstate.AckNak {
		o.ackAt = 0 // its new deadline may come before the armed one
	}
	answer := out.Reply && reply != "" && kind != cstate.AckNext
	var sends []outMsg
	if kind == cstate.AckNext && reply != "" {
		sends = o.addRequestLocked(reply, bytes.Clone(arg), sends)
	} else {
		sends = o.pumpLocked(sends)
	}
	if answer && o.dirty {
		if err := o.saveStateLocked(); err != nil {
			answer = false // the client retries its AckSync; never answer an ack not on disk
			mset.jsa.js.srv.Errorf("JetStream: saving consumer %q > %q: %v", mset.name, o.name, err)
		}
	}
	o.queueOutLocked(sends)
	mset.mu.Unlock()
	o.flushOutTo(readWake(c))
	if answer {
		mset.jsa.js.srv.deliver(nil, mset.jsa.acc, strings.Clone(reply), "", nil, nil)
	}
}
