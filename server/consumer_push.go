package server

import (
	"bytes"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/internal/clock"
)

// A push consumer delivers to its deliver_subject (one member of a
// deliver_group when the subscribers are a queue group) whenever that
// subject has interest (push_bound), instead of answering pull requests.
// Every delivery is still an OpDeliver applied first; what is here is
// leader-only soft state, guarded by the stream's mu: interest, flow
// control, heartbeats, the rate limit and replay pacing.

// The headers nats-server's push consumers send.
const (
	JSLastConsumerSeq = "Nats-Last-Consumer"
	JSLastStreamSeq   = "Nats-Last-Stream"
	JSConsumerStalled = "Nats-Consumer-Stalled"
	JSMsgSize         = "Nats-Msg-Size"
)

// jsFlowControlMax is the window of bytes a flow-controlled push consumer
// may have outstanding (nats-server's JsFlowControlMaxPending); it starts
// at a sixteenth and doubles with every flow control answered.
const jsFlowControlMax = 32 * 1024 * 1024

// pushPassMsgs and pushPassBytes bound what one pump pass decides: the
// rest is decided after those are sent (flushOut), so a consumer without
// flow control or ack limits never holds a whole stream in its queue.
const (
	pushPassMsgs  = 1024
	pushPassBytes = 4 * 1024 * 1024
)

type pushState struct {
	subj   string      // deliver subject (changes only by an update)
	active bool        // the deliver subject has interest
	kick   atomic.Bool // an interest recheck is scheduled (consumer_push_interest.go)

	hbT clock.Timer // idle heartbeat, reset by every delivery

	fcid         string // outstanding flow control reply subject, "" when none
	pbytes, fcsz int    // bytes sent since the last answered flow control; at fcid
	maxpb, pblim int    // current window and its ceiling (0: no flow control)
	waitT        clock.Timer
	waiting      bool      // the pump waits for waitT (rate limit or replay)
	rateAt       time.Time // rate limit: when the bytes sent so far are paid for
	replay       bool      // replay_policy original, not caught up yet
	replayEnd    uint64    // the stream's last sequence when the consumer started
	lastTS       int64     // replay: stamp of the last message delivered
	lastSent     time.Time // replay: when it was delivered
	scanned      uint64    // the pump found nothing to deliver up to here
	more         bool      // a pass stopped at its bound: flushOut pumps again
}

// newPushState is the soft state of a new (or recovered) push consumer.
func (o *consumer) newPushState() *pushState {
	p := &pushState{subj: o.cfg.DeliverSubject}
	if o.cfg.FlowControl {
		p.pblim, p.maxpb = jsFlowControlMax, jsFlowControlMax/16
	}
	if o.cfg.ReplayPolicy == ReplayOriginal {
		_, last := storeSource{o.mset.st()}.Bounds()
		p.replay, p.replayEnd = true, last
	}
	return p
}

// startPushLocked starts a push consumer: interest and the heartbeat.
func (o *consumer) startPushLocked() {
	p := o.push
	p.active = hasInterest(o.mset.jsa.acc, p.subj)
	o.armHeartbeatLocked()
	if !p.active {
		o.armIdleLocked()
	}
}

// pushPumpLocked delivers to the deliver subject what the state lets
// through, while it has interest, flow control leaves room and the rate
// limit and replay pacing allow.
func (o *consumer) pushPumpLocked(sends []outMsg) []outMsg {
	p := o.push
	var sm StoreMsg
	n, size := 0, 0
	for !o.closed && p.active && !p.waiting {
		if n >= pushPassMsgs || size >= pushPassBytes {
			p.more = true
			break
		}
		if p.maxpb > 0 && p.pbytes > p.maxpb {
			break // stalled until the client answers the flow control
		}
		m := o.nextLocked(&sm)
		if m == nil {
			_, last := storeSource{o.mset.st()}.Bounds()
			p.scanned = max(p.scanned, last)
			break
		}
		hdr, msg := m.Hdr, m.Msg
		if o.cfg.HeadersOnly {
			hdr, msg = headersOnly(hdr, len(msg)), nil
		}
		if wait := o.paceLocked(m, len(m.Subj)+len(hdr)+len(msg)); wait > 0 {
			o.requeueFrontLocked(m.Seq)
			o.armWaitLocked(wait)
			break
		}
		d, ok, notDue := o.deliverNowLocked(m.Seq)
		if notDue {
			continue // a redelivery not due (yet): the ack timer brings it back
		}
		if !ok {
			break
		}
		ack := o.ackSubject(d, m.TS)
		sends = append(sends, outMsg{to: p.subj, subj: m.Subj, reply: ack,
			hdr: bytes.Clone(hdr), msg: bytes.Clone(msg)})
		sz := len(p.subj) + len(ack) + len(hdr) + len(msg)
		o.deliveredPushLocked(m, sz)
		n, size = n+1, size+sz
		if p.maxpb > 0 && o.needFlowControlLocked(sz) {
			sends = append(sends, o.flowControlLocked())
		}
	}
	sends = o.ackFCFullLocked(sends)
	o.armAckTimerLocked()
	return sends
}

// deliveredPushLocked accounts for a message sent: flow control bytes,
// replay pacing, the heartbeat.
func (o *consumer) deliveredPushLocked(m *StoreMsg, size int) {
	p := o.push
	if p.maxpb > 0 {
		p.pbytes += size
	}
	if p.replay {
		p.lastTS, p.lastSent = m.TS, o.now()
		if m.Seq >= p.replayEnd {
			p.replay = false
		}
	}
	if p.hbT != nil {
		p.hbT.Reset(o.cfg.Heartbeat)
	}
}

// requeueFrontLocked puts a redelivery taken from the queue back at its
// head (a first delivery needs nothing: Delivered did not move).
func (o *consumer) requeueFrontLocked(seq uint64) {
	if _, pending := o.state.PendingOf(seq); !pending {
		return
	}
	o.queueLocked(seq)
	copy(o.rdq[1:], o.rdq[:len(o.rdq)-1])
	o.rdq[0] = seq
}

// headersOnly is hdr with the Nats-Msg-Size header added, as sent by a
// headers_only consumer in place of the payload.
func headersOnly(hdr []byte, size int) []byte {
	var b []byte
	switch {
	case len(hdr) == 0:
		b = append(b, "NATS/1.0\r\n"...)
	case bytes.HasSuffix(hdr, []byte("\r\n\r\n")):
		b = append(b, hdr[:len(hdr)-2]...)
	default: // not a well-ended header block: never cut into it
		b = append(b, hdr...)
		if !bytes.HasSuffix(b, []byte("\r\n")) {
			b = append(b, "\r\n"...)
		}
	}
	b = append(b, JSMsgSize+": "...)
	b = strconv.AppendInt(b, int64(size), 10)
	return append(b, "\r\n\r\n"...)
}

// needFlowControlLocked: a flow control request goes out once more than
// half the window is outstanding and none is.
func (o *consumer) needFlowControlLocked(sz int) bool {
	p := o.push
	if p.fcid == "" && p.pbytes > p.maxpb/2 {
		return true
	}
	if p.fcid != "" && p.pbytes-p.fcsz >= p.maxpb {
		p.fcsz += sz
	}
	return false
}

// flowControlLocked makes a flow control request: a status to the deliver
// subject whose reply the client answers ($JS.FC.<stream>.<consumer>.<id>).
func (o *consumer) flowControlLocked() outMsg {
	p := o.push
	const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	var id [4]byte
	r := fastrand()
	for i := range id {
		id[i] = digits[r%uint32(len(digits))]
		r /= uint32(len(digits))
	}
	p.fcid = "$JS.FC." + o.mset.name + "." + o.name + "." + string(id[:])
	p.fcsz = p.pbytes
	return outMsg{to: p.subj, subj: p.subj, reply: p.fcid, hdr: []byte("NATS/1.0 100 FlowControl Request\r\n\r\n")}
}

// flowControlAnswered: the client answered flow control request fcid.
func (o *consumer) flowControlAnsweredLocked(fcid string) []outMsg {
	p := o.push
	if p == nil || fcid != p.fcid {
		return nil // not the latest one sent
	}
	p.maxpb = min(p.maxpb*2, p.pblim)
	p.pbytes = max(p.pbytes-p.fcsz, 0)
	p.fcid, p.fcsz = "", 0
	return o.pumpLocked(nil)
}

// armHeartbeatLocked arms the idle heartbeat of a consumer that has one.
func (o *consumer) armHeartbeatLocked() {
	hb := o.cfg.Heartbeat
	if hb <= 0 || o.closed {
		return
	}
	if o.push.hbT != nil {
		o.push.hbT.Reset(hb)
		return
	}
	o.push.hbT = o.mset.jsa.js.srv.clock.AfterFunc(hb, o.heartbeatFired)
}

// heartbeatFired sends an idle heartbeat to a bound consumer: the last
// consumer and stream sequences, and the flow control it is stalled on.
func (o *consumer) heartbeatFired() {
	mset := o.mset
	mset.mu.Lock()
	if o.closed || o.push == nil || !o.leadsLocked() {
		mset.mu.Unlock()
		return
	}
	p := o.push
	if p.active {
		d := o.state.Delivered()
		hdr := fmt.Sprintf("NATS/1.0 100 Idle Heartbeat\r\n%s: %d\r\n%s: %d\r\n", JSLastConsumerSeq, d.Consumer, JSLastStreamSeq, max(d.Stream, p.scanned))
		if p.fcid != "" {
			hdr += JSConsumerStalled + ": " + p.fcid + "\r\n"
		}
		o.queueOutLocked([]outMsg{statusMsg(p.subj, hdr+"\r\n")})
		o.queueOutLocked(o.ackFCIdleLocked())
	}
	if o.cfg.Heartbeat > 0 {
		p.hbT.Reset(o.cfg.Heartbeat)
	}
	mset.mu.Unlock()
	o.flushOut()
}

// stopPushLocked stops the push consumer's timers.
func (o *consumer) stopPushLocked() {
	if o.push == nil {
		return
	}
	for _, t := range []clock.Timer{o.push.hbT, o.push.waitT} {
		if t != nil {
			t.Stop()
		}
	}
}
