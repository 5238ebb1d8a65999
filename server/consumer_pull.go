package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/internal/clock"
	cstate "github.com/nats-io/nats-server/v2/internal/consumer"
	"github.com/nats-io/nats-server/v2/internal/sublist"
)

// pullRequest is one waiting CONSUMER.MSG.NEXT request (leader-only soft
// state, guarded by the stream's mu).
type pullRequest struct {
	o        *consumer
	reply    string
	n        int // messages still wanted
	b        int // bytes still allowed, when maxBytes
	maxBytes bool
	noWait   bool
	expires  time.Time // zero: never
	hb       time.Duration
	timer    clock.Timer // expiry and heartbeats
	done     bool
	reserved int            // replicated stream: messages proposed for it, not applied yet
	pg       *PriorityGroup // the request's priority fields; nil when it was not JSON
}

func (wr *pullRequest) stop() {
	wr.done = true
	if wr.timer != nil {
		wr.timer.Stop()
	}
}

// outMsg is a message to send once the stream's lock is released.
type outMsg struct {
	to, subj, reply string
	hdr, msg        []byte
}

func statusMsg(to, hdr string) outMsg { return outMsg{to: to, subj: to, hdr: []byte(hdr)} }

func pendingStatus(to, status string, n, b int) outMsg {
	return statusMsg(to, fmt.Sprintf("NATS/1.0 %s\r\n%s: %d\r\n%s: %d\r\n\r\n", status, JSPullRequestPendingMsgs, n, JSPullRequestPendingBytes, b))
}

// The pull status headers nats.go's jetstream package reads.
const (
	JSPullRequestPendingMsgs  = "Nats-Pending-Messages"
	JSPullRequestPendingBytes = "Nats-Pending-Bytes"
)

// queueOutLocked queues msgs for sending in the order they were decided
// (under the stream's lock, so in apply order).
func (o *consumer) queueOutLocked(msgs []outMsg) { o.outq = append(o.outq, msgs...) }

// flushOut sends the queued messages outside the lock, in queue order: one
// goroutine at a time drains the queue, others leave their messages to it,
// so concurrent publishers and ack handlers never reorder a consumer's
// deliveries (an ordered consumer resets on a gap) or send a request's 408
// before its last message. The receivers' write loops are woken once per
// batch drained, not once per message.
func (o *consumer) flushOut() { o.flushOutTo(nil) }

// flushOutTo is flushOut for a caller on a client's read loop, which
// passes that client's pcd as wake: the receivers are woken when the read
// ends (client.flushPending), so the deliveries that all the acks of one
// read let through leave in one write instead of one each.
func (o *consumer) flushOutTo(wake map[*client]struct{}) {
	mset := o.mset
	mset.mu.Lock()
	if o.flushing {
		mset.mu.Unlock()
		return
	}
	o.flushing = true
	own := wake == nil
	if own {
		if o.wake == nil {
			o.wake = map[*client]struct{}{}
		}
		wake = o.wake // only the flushing goroutine touches it
	}
	for len(o.outq) > 0 {
		batch := o.outq
		o.outq = nil
		mset.mu.Unlock()
		s := mset.jsa.js.srv
		for i := range batch {
			m := &batch[i]
			s.deliverShown(wake, mset.jsa.acc, m.to, m.subj, m.reply, m.hdr, m.msg)
		}
		if own {
			wakeAll(wake)
		}
		mset.mu.Lock()
		if len(o.outq) == 0 && o.push != nil && o.push.more && !o.closed {
			o.push.more = false
			o.queueOutLocked(o.pumpLocked(nil))
		}
	}
	o.flushing = false
	mset.mu.Unlock()
}

// parsePullRequest reads a MSG.NEXT body as nats-server does: empty or
// anything else that is not JSON is one message (a plain number a batch),
// bad JSON is an error for a 400 status.
func parsePullRequest(body []byte) (*JSApiConsumerGetNextRequest, *PriorityGroup, error) {
	req := &JSApiConsumerGetNextRequest{Batch: 1}
	var pg *PriorityGroup
	body = bytes.TrimSpace(body)
	switch {
	case len(body) > 0 && body[0] == '{':
		if err := json.Unmarshal(body, req); err != nil {
			return nil, nil, err
		}
		if req.Heartbeat > 0 && req.Heartbeat*2 > req.Expires {
			return nil, nil, errors.New("heartbeat value too large")
		}
		g := req.PriorityGroup
		pg = &g
	case len(body) > 0:
		if n, err := strconv.Atoi(string(body)); err == nil {
			req.Batch = n
		}
	}
	if req.Batch <= 0 {
		req.Batch = 1
	}
	return req, pg, nil
}

// checkPullLimits applies the consumer's max_batch, max_expires and
// max_bytes to a request: the status to refuse it with, or "".
func (o *consumer) checkPullLimits(req *JSApiConsumerGetNextRequest) string {
	c := o.cfg
	switch {
	case c.MaxRequestBatch > 0 && req.Batch > c.MaxRequestBatch:
		return fmt.Sprintf("409 Exceeded MaxRequestBatch of %d", c.MaxRequestBatch)
	case c.MaxRequestExpires > 0 && req.Expires > c.MaxRequestExpires:
		return fmt.Sprintf("409 Exceeded MaxRequestExpires of %v", c.MaxRequestExpires)
	case c.MaxRequestMaxBytes > 0 && req.MaxBytes > c.MaxRequestMaxBytes:
		return fmt.Sprintf("409 Exceeded MaxRequestMaxBytes of %v", c.MaxRequestMaxBytes)
	case c.MaxWaiting > 0 && len(o.waiting) >= c.MaxWaiting:
		return "409 Exceeded MaxWaiting"
	}
	return ""
}

// addRequestLocked queues a pull request and delivers what it can.
func (o *consumer) addRequestLocked(reply string, body []byte, sends []outMsg) []outMsg {
	if !sublist.ValidPublishSubject(reply) {
		return sends // nothing can be delivered to a wildcard
	}
	// The reply is a view of the requester's read buffer, and what is
	// queued here may be sent by another goroutine after that buffer moved on.
	reply = strings.Clone(reply)
	req, pg, err := parsePullRequest(body)
	if err != nil {
		return append(sends, statusMsg(reply, "NATS/1.0 400 Bad Request - "+err.Error()+"\r\n\r\n"))
	}
	if st := o.checkPullLimits(req); st != "" {
		return append(sends, statusMsg(reply, "NATS/1.0 "+st+"\r\n\r\n"))
	}
	if st := o.checkPriorityLocked(pg); st != "" {
		return append(sends, statusMsg(reply, "NATS/1.0 "+st+"\r\n\r\n"))
	}
	wr := &pullRequest{o: o, reply: reply, n: req.Batch, b: req.MaxBytes, maxBytes: req.MaxBytes > 0,
		noWait: req.NoWait, hb: max(req.Heartbeat, time.Millisecond), pg: pg}
	if req.Heartbeat <= 0 {
		wr.hb = 0
	}
	if req.Expires > 0 {
		wr.expires = o.now().Add(req.Expires)
	}
	if wr.noWait && !o.hasWorkLocked() {
		return append(sends, statusMsg(reply, "NATS/1.0 404 No Messages\r\n\r\n"))
	}
	o.enqueueLocked(wr)
	o.armRequestLocked(wr)
	return o.pumpLocked(sends)
}

// hasWorkLocked reports whether something could be delivered now.
func (o *consumer) hasWorkLocked() bool {
	if len(o.rdq) > 0 {
		return true
	}
	var sm StoreMsg
	return o.nextFirstLocked(&sm) != nil
}

// armRequestLocked arms a request's timer for its next heartbeat or its
// expiry, whichever is first.
func (o *consumer) armRequestLocked(wr *pullRequest) {
	clk := o.mset.jsa.js.srv.clock
	var wait time.Duration
	if !wr.expires.IsZero() {
		wait = max(clk.Until(wr.expires), time.Millisecond)
	}
	if wr.hb > 0 && (wait == 0 || wr.hb < wait) {
		wait = wr.hb
	}
	if wait == 0 {
		return
	}
	if wr.timer != nil {
		wr.timer.Reset(wait)
		return
	}
	wr.timer = clk.AfterFunc(wait, func() { o.requestTimer(wr) })
}

// requestTimer expires a request (408 Request Timeout) or sends it an
// idle heartbeat.
func (o *consumer) requestTimer(wr *pullRequest) {
	mset := o.mset
	mset.mu.Lock()
	if wr.done || o.closed {
		mset.mu.Unlock()
		return
	}
	var m outMsg
	if !wr.expires.IsZero() && !o.now().Before(wr.expires) {
		o.removeRequestLocked(wr)
		m = pendingStatus(wr.reply, "408 Request Timeout", wr.n, wr.b)
	} else {
		m = pendingStatus(wr.reply, "100 Idle Heartbeat", wr.n, wr.b)
		o.armRequestLocked(wr)
	}
	o.queueOutLocked([]outMsg{m})
	mset.mu.Unlock()
	o.flushOut()
}

func (o *consumer) removeRequestLocked(wr *pullRequest) {
	wr.stop()
	for i, w := range o.waiting {
		if w == wr {
			o.waiting = append(o.waiting[:i], o.waiting[i+1:]...)
			return
		}
	}
}

// nextFirstLocked is the next message to deliver for the first time, nil
// when there is none or max_ack_pending is reached or the consumer paused.
func (o *consumer) nextFirstLocked(sm *StoreMsg) *StoreMsg {
	if p := o.state.PausedUntil(); p > 0 && p > o.now().UnixNano() {
		return nil
	}
	from, pending := o.state.Delivered().Stream+1, o.state.NumAckPending()
	if l := o.lead; l != nil && l.firsts > 0 { // first deliveries proposed, not applied yet
		from, pending = max(from, l.cursor), pending+l.firsts
	}
	if m := o.cfg.MaxAckPending; m > 0 && o.cfg.AckPolicy != AckNone && pending >= m {
		return nil
	}
	if len(o.lss) > 0 {
		if m := o.nextLastPerSubjectLocked(from, sm); m != nil {
			return m
		}
	}
	return storeSource{o.mset.st()}.nextMatching(o.state.Config().FilterSubjects, from, sm)
}

// nextLocked picks the next message to offer the head request: a
// redelivery first, else a first delivery.
func (o *consumer) nextLocked(sm *StoreMsg) *StoreMsg {
	if p := o.state.PausedUntil(); p > 0 && p > o.now().UnixNano() {
		return nil // paused: redeliveries wait in the queue too
	}
	for len(o.rdq) > 0 {
		seq := o.popLocked()
		if _, ok := o.state.PendingOf(seq); !ok {
			continue
		}
		if m, err := o.mset.st().LoadMsg(seq, sm); err == nil {
			return m
		}
	}
	return o.nextFirstLocked(sm)
}

// pumpLocked delivers to waiting requests, in order, what the state lets
// through: each delivery is a Deliver entry applied first, and the message
// goes out (after the lock is released) with the ack subject made of the
// applied numbers. Requests asking for no_wait that find nothing more get
// 404 No Messages.
func (o *consumer) pumpLocked(sends []outMsg) []outMsg {
	if o.viaLog() {
		if o.push != nil {
			return o.pushProposeLocked(sends)
		}
		return o.pumpProposeLocked(sends)
	}
	if o.push != nil {
		return o.pushPumpLocked(sends)
	}
	var sm StoreMsg
	for len(o.waiting) > 0 && !o.closed {
		var wr *pullRequest
		if wr, sends = o.pickLocked(sends); wr == nil {
			break
		}
		m := o.nextLocked(&sm)
		if m == nil {
			break
		}
		pin := o.pinLocked(wr)
		if pin != "" {
			m.Hdr = appendHeaders(m.Hdr, JSPullRequestNatsPinId, pin)
		}
		size := o.sizeLocked(wr, m)
		if wr.maxBytes && size > wr.b {
			o.removeRequestLocked(wr)
			sends = append(sends, pendingStatus(wr.reply, "409 Message Size Exceeds MaxBytes", wr.n, wr.b))
			o.requeueFrontLocked(m.Seq) // offered again to the next request
			continue
		}
		d, ok, notDue := o.deliverNowLocked(m.Seq)
		if notDue {
			continue // a redelivery not due (yet): the ack timer brings it back
		}
		if !ok {
			break
		}
		ack := o.ackSubject(d, m.TS)
		sends = append(sends, outMsg{to: wr.reply, subj: m.Subj, reply: ack,
			hdr: bytes.Clone(m.Hdr), msg: bytes.Clone(m.Msg)})
		wr.n--
		wr.b -= size
		if wr.n <= 0 || (wr.maxBytes && wr.b <= 0) {
			o.removeRequestLocked(wr)
		}
	}
	o.armAckTimerLocked()
	return o.endNoWaitLocked(sends)
}

// endNoWaitLocked answers the no_wait requests left once nothing more can
// be delivered: 404 No Messages, as nats-server does at the end of the
// stream.
func (o *consumer) endNoWaitLocked(sends []outMsg) []outMsg {
	if !o.anyNoWaitLocked() || o.hasWorkLocked() {
		return sends
	}
	keep := o.waiting[:0]
	for _, wr := range o.waiting {
		if wr.noWait && wr.reserved == 0 {
			wr.stop()
			sends = append(sends, statusMsg(wr.reply, "NATS/1.0 404 No Messages\r\n\r\n"))
			continue
		}
		keep = append(keep, wr)
	}
	o.waiting = keep
	return sends
}

// sizeLocked is a delivery's size as nats-server counts it against a
// request's max_bytes: subject, ack subject, headers and payload. The ack
// subject's numbers are the ones the apply will assign (num_pending
// predicted; it only decides the length of one token). Computed only for
// requests with max_bytes.
func (o *consumer) sizeLocked(wr *pullRequest, m *StoreMsg) int {
	if !wr.maxBytes {
		return len(m.Subj) + len(m.Hdr) + len(m.Msg)
	}
	a := cstate.AckSubject{Stream: o.mset.name, Consumer: o.name, SSeq: m.Seq, CSeq: o.state.Delivered().Consumer + 1, TS: m.TS, Deliveries: 1}
	if p, ok := o.state.PendingOf(m.Seq); ok {
		a.Deliveries = p.Deliveries + 1
	} else if n := o.numPendingLocked(); n > 0 {
		a.Pending = n - 1
	}
	var buf [128]byte
	return len(m.Subj) + len(cstate.AppendAckSubject(buf[:0], &a)) + len(m.Hdr) + len(m.Msg)
}

func (o *consumer) anyNoWaitLocked() bool {
	for _, wr := range o.waiting {
		if wr.noWait {
			return true
		}
	}
	return false
}

// deliverNowLocked applies one Deliver entry for seq on a consumer off the
// log (one server, or local). notDue: the apply refused a redelivery whose
// message is still pending (the ack timer brings it back); otherwise !ok
// means nothing more can be delivered now.
func (o *consumer) deliverNowLocked(seq uint64) (d cstate.Delivery, ok, notDue bool) {
	out := o.applyLocked(&cstate.Entry{Op: cstate.OpDeliver, TS: o.now().UnixNano(), Gen: o.state.Gen(), Seqs: []uint64{seq}})
	if out.Err != nil || len(out.Deliveries) == 0 {
		_, pending := o.state.PendingOf(seq)
		return cstate.Delivery{}, false, pending
	}
	return out.Deliveries[0], true, false
}

// ackSubject is the reply subject of delivery d of a message stamped ts.
func (o *consumer) ackSubject(d cstate.Delivery, ts int64) string {
	var buf [160]byte // one allocation, the string, for the usual lengths
	return string(cstate.AppendAckSubject(buf[:0], &cstate.AckSubject{Stream: o.mset.name, Consumer: o.name,
		Deliveries: d.Deliveries, SSeq: d.SSeq, CSeq: d.CSeq, TS: ts, Pending: d.Pending}))
}
