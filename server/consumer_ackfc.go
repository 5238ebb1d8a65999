package server

import (
	"strconv"

	cstate "github.com/nats-io/nats-server/v2/internal/consumer"
)

// Ack policy flow_control (push consumers with flow control only, as
// nats-server v2.15.2: its durable sourcing uses it): the answer to a flow
// control request is the ack. The answer carries Nats-Last-Stream and
// Nats-Last-Consumer, and acknowledges everything up to that stream
// sequence, as an ack under policy all. To keep acks flowing, a flow
// control request also goes out when max_ack_pending is reached and with
// an idle heartbeat while messages are unacknowledged.

// ackFCFullLocked appends to sends, after a round of deliveries, a flow
// control request of an ack-by-flow-control consumer that has reached
// max_ack_pending and has no request out.
func (o *consumer) ackFCFullLocked(sends []outMsg) []outMsg {
	if o.cfg.AckPolicy != AckFlowControl || o.push.fcid != "" ||
		o.cfg.MaxAckPending <= 0 || o.state.NumAckPending() < o.cfg.MaxAckPending {
		return sends
	}
	return append(sends, o.flowControlLocked())
}

// ackFCIdleLocked: with an idle heartbeat, an ack-by-flow-control consumer
// holding unacknowledged messages asks for a flow control answer.
func (o *consumer) ackFCIdleLocked() []outMsg {
	if o.cfg.AckPolicy != AckFlowControl || o.push.fcid != "" || o.state.NumAckPending() == 0 {
		return nil
	}
	return []outMsg{o.flowControlLocked()}
}

// ackFCEntry is the ack a flow control answer with headers hdr carries:
// ok false when it names no stream sequence.
func ackFCEntry(hdr []byte) (cstate.Entry, bool) {
	sseq, err := strconv.ParseUint(string(getHeader(JSLastStreamSeq, hdr)), 10, 64)
	if err != nil || sseq == 0 {
		return cstate.Entry{}, false
	}
	dseq, _ := strconv.ParseUint(string(getHeader(JSLastConsumerSeq, hdr)), 10, 64)
	return cstate.Entry{Op: cstate.OpAckAll, Seq: sseq, CSeq: dseq}, true
}

// ackFCAnsweredLocked applies (one server) or proposes (replicated) the
// ack of the flow control answer fcid with headers hdr, when o acks by
// flow control and fcid is the request it has out; it returns what to
// send.
func (o *consumer) ackFCAnsweredLocked(fcid string, hdr []byte) []outMsg {
	if o.cfg.AckPolicy != AckFlowControl || o.push == nil || fcid != o.push.fcid {
		return nil
	}
	e, ok := ackFCEntry(hdr)
	if !ok {
		return nil
	}
	if o.viaLog() {
		return o.ackLeaderLocked(&e, cstate.AckAck, "", nil)
	}
	e.TS = o.now().UnixNano()
	o.applyLocked(&e)
	return nil
}
