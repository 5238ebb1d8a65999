package server

import (
	"bytes"
	"sync/atomic"
	"time"

	cstate "github.com/nats-io/nats-server/v2/internal/consumer"
)

// The stream leader's side of a replicated consumer: it serves pull
// requests and acks and proposes every change; the apply decides. Its
// soft state (waiting requests, redelivery queue, timers and the
// deliveries it proposed and has not applied yet) is rebuilt from the
// applied State when it starts leading (after LeaderReady: its whole log
// is applied) and dropped when it stops: waiting requests get 409
// Leadership Change and their clients pull again from the new leader.

// consumerLead is a leading consumer's proposals in flight.
type consumerLead struct {
	tag      uint64                  // the last Deliver entry's tag
	inflight map[uint64]*deliverProp // by tag
	firsts   int                     // first deliveries in flight
	cursor   uint64                  // next stream seq to offer while firsts > 0
	redeliv  map[uint64]struct{}     // redeliveries in flight
}

// deliverProp is one proposed Deliver entry, for one pull request.
type deliverProp struct {
	wr    *pullRequest
	seqs  []uint64
	sizes []int
	re    []bool // seqs[i] is a redelivery
}

// deliverBatchMax bounds the messages of one Deliver entry, and
// deliverInflightMax the Deliver entries a consumer has in flight (what
// the leader holds for proposals not applied yet is bounded whatever the
// requests' batch).
const (
	deliverBatchMax    = 256
	deliverInflightMax = 16
)

// leadsLocked reports whether this server acts for the consumer: always
// on one server, on a replicated stream only while leading it.
func (o *consumer) leadsLocked() bool { return !o.viaLog() || o.lead != nil }

// viaLog reports whether o's changes are entries of the stream's raft log
// (a consumer of a replicated stream that is not local).
func (o *consumer) viaLog() bool { return o.mset.replicated && !o.local }

// startLeadingLocked rebuilds the soft state from the applied State.
func (o *consumer) startLeadingLocked() {
	o.lead = &consumerLead{tag: uint64(o.now().UnixNano()), inflight: map[uint64]*deliverProp{}, redeliv: map[uint64]struct{}{}}
	o.rdq, o.queued, o.ackAt = nil, nil, 0
	o.active = o.now()
	o.armAckTimerLocked()
	o.armIdleLocked()
	o.startPushLeadingLocked()
	o.startPausePinLeadingLocked()
}

// stopLeadingLocked drops the soft state; the returned statuses tell the
// waiting requests to pull again.
func (o *consumer) stopLeadingLocked() []outMsg {
	var sends []outMsg
	for _, wr := range o.waiting {
		wr.stop()
		sends = append(sends, statusMsg(wr.reply, "NATS/1.0 409 Leadership Change\r\n\r\n"))
	}
	o.waiting, o.lead, o.rdq, o.queued, o.ackAt = nil, nil, nil, nil, 0
	o.stopPushLeadingLocked()
	o.stopPausePinLeadingLocked()
	for _, t := range []interface{ Stop() bool }{o.ackT, o.idleT} {
		if t != nil {
			t.Stop()
		}
	}
	return sends
}

// pumpLeaderLocked offers what can be delivered to waiting requests and
// queues what that sends (the caller flushes).
func (o *consumer) pumpLeaderLocked() { o.queueOutLocked(o.pumpLocked(nil)) }

// pumpProposeLocked is pumpLocked on a replicated stream: it reserves the
// next messages for each waiting request in turn and proposes them as one
// Deliver entry; they are sent when it is applied (deliveredLocked).
func (o *consumer) pumpProposeLocked(sends []outMsg) []outMsg {
	if o.lead == nil || o.closed {
		return sends
	}
	var sm StoreMsg
	for i := 0; i < len(o.waiting) && len(o.lead.inflight) < deliverInflightMax; {
		wr := o.waiting[i]
		if wr.n <= 0 || (wr.maxBytes && wr.b <= 0) {
			i++
			continue
		}
		if r := matchSubject(o.mset.jsa.acc, wr.reply); len(r.Plain) == 0 && len(r.Queues) == 0 {
			o.removeRequestLocked(wr)
			continue
		}
		if status, wait := o.leadGateLocked(wr); status != "" || wait { // priority groups
			if status == "" {
				i++
				continue
			}
			o.removeRequestLocked(wr)
			sends = append(sends, pendingStatus(wr.reply, status, wr.n, wr.b))
			continue
		}
		p, status, exhausted := o.reserveLocked(wr, &sm)
		if status != "" {
			o.removeRequestLocked(wr)
			sends = append(sends, pendingStatus(wr.reply, status, wr.n, wr.b))
			continue
		}
		if p != nil {
			o.pinForLocked(wr) // a new pin goes first
			o.proposeDeliverLocked(p)
		}
		if exhausted {
			break
		}
		if p == nil || len(p.seqs) < deliverBatchMax {
			i++
		}
	}
	o.armAckTimerLocked()
	return o.endNoWaitLocked(sends)
}

// reserveLocked takes the next messages for wr (at most deliverBatchMax):
// nil when none; status when the next one exceeds the request's max_bytes
// and nothing is in flight for it; exhausted when nothing more is there.
func (o *consumer) reserveLocked(wr *pullRequest, sm *StoreMsg) (p *deliverProp, status string, exhausted bool) {
	l := o.lead
	for wr.n > 0 && (p == nil || len(p.seqs) < deliverBatchMax) {
		m := o.nextLeadLocked(sm)
		if m == nil {
			return p, "", true
		}
		_, re := o.state.PendingOf(m.Seq)
		size := o.deliverySize(m, p)
		if wr.maxBytes && size > wr.b {
			if re {
				o.requeueFrontLocked(m.Seq)
			}
			if p == nil && wr.reserved == 0 {
				return nil, "409 Message Size Exceeds MaxBytes", false
			}
			return p, "", false
		}
		if p == nil {
			p = &deliverProp{wr: wr}
		}
		if re {
			l.redeliv[m.Seq] = struct{}{}
		} else {
			l.firsts++
			l.cursor = m.Seq + 1
		}
		p.seqs, p.sizes, p.re = append(p.seqs, m.Seq), append(p.sizes, size), append(p.re, re)
		wr.n--
		wr.b -= size
		wr.reserved++
	}
	return p, "", false
}

// nextLeadLocked is nextLocked without the redeliveries in flight.
func (o *consumer) nextLeadLocked(sm *StoreMsg) *StoreMsg {
	for len(o.rdq) > 0 {
		seq := o.popLocked()
		if _, ok := o.state.PendingOf(seq); !ok {
			continue
		}
		if _, ok := o.lead.redeliv[seq]; ok {
			continue
		}
		if m, err := o.mset.st().LoadMsg(seq, sm); err == nil {
			return m
		}
	}
	return o.nextFirstLocked(sm)
}

// deliverySize is m's size against a max_bytes request, its ack subject
// predicted (only its length matters).
func (o *consumer) deliverySize(m *StoreMsg, p *deliverProp) int {
	n := 0
	if p != nil {
		n = len(p.seqs)
	}
	a := cstate.AckSubject{Stream: o.mset.name, Consumer: o.name, SSeq: m.Seq, CSeq: o.state.Delivered().Consumer + 1 + uint64(n), TS: m.TS, Deliveries: 1}
	var buf [128]byte
	return len(m.Subj) + len(cstate.AppendAckSubject(buf[:0], &a)) + len(m.Hdr) + len(m.Msg)
}

// proposeDeliverLocked proposes p as a Deliver entry.
func (o *consumer) proposeDeliverLocked(p *deliverProp) {
	l := o.lead
	l.tag++
	l.inflight[l.tag] = p
	o.proposeLocked(&cstate.Entry{Op: cstate.OpDeliver, TS: o.now().UnixNano(), Gen: o.state.Gen(), Tag: l.tag, Seqs: p.seqs}, "", l.tag)
}

// proposeLocked proposes a leader's entry (stamped by the caller); a
// refused Deliver entry gives its reservation back. An ack's reply is
// never answered on a refusal: the client retries its AckSync.
func (o *consumer) proposeLocked(e *cstate.Entry, reply string, tag uint64) {
	e.Consumer = o.name
	mset := o.mset
	data := encodeStreamEntry(&streamEntry{op: streamOpConsumer, origin: mset.jsa.js.srv.Name(), reply: reply, cons: cstate.AppendEntry(nil, e)})
	done := &consumerProposal{o: o, tag: tag}
	if mset.group != nil {
		mset.group.Propose(data, done)
	} else {
		done.proposed(data, errGroupStopped)
	}
	if !done.state.CompareAndSwap(0, 1) { // refused inside Propose, under this lock
		o.releaseTagLocked(tag)
	}
}

// consumerProposal learns whether a leader's proposal entered the log.
// state: 0 while Propose runs, 1 once it returned, 2 refused inside it.
type consumerProposal struct {
	o     *consumer
	tag   uint64
	state atomic.Int32
}

// proposed runs inside Propose (under the stream's lock the proposer
// holds: the proposer gives the reservation back) or later on the group's
// goroutine, holding no lock.
func (p *consumerProposal) proposed(_ []byte, err error) {
	if err == nil || p.state.CompareAndSwap(0, 2) {
		return
	}
	p.o.mset.mu.Lock()
	p.o.releaseTagLocked(p.tag)
	p.o.mset.mu.Unlock()
}

// releaseTagLocked gives back the reservation of a refused Deliver entry.
func (o *consumer) releaseTagLocked(tag uint64) {
	if o.lead == nil || tag == 0 {
		return
	}
	if p := o.lead.inflight[tag]; p != nil {
		delete(o.lead.inflight, tag)
		o.releaseLocked(p, nil)
	}
}

// deliveredLocked: a Deliver entry was applied on the leader; if this
// leader proposed it, the messages the apply let through go to the
// request, with the ack subjects of the applied numbers.
func (o *consumer) deliveredLocked(out *cstate.Outcome) {
	if o.lead == nil {
		return
	}
	p := o.lead.inflight[out.Tag]
	if p == nil {
		return // another leader's entry: what it delivered comes back after the ack wait
	}
	delete(o.lead.inflight, out.Tag)
	if p.wr == nil { // a push consumer's
		o.pushDeliveredLocked(p, out)
		o.releaseLocked(p, out.Deliveries)
		return
	}
	var sm StoreMsg
	sends := make([]outMsg, 0, len(out.Deliveries))
	for _, d := range out.Deliveries {
		m, err := o.mset.st().LoadMsg(d.SSeq, &sm)
		if err != nil {
			continue
		}
		ack := o.ackSubject(d, m.TS)
		sends = append(sends, outMsg{to: p.wr.reply, subj: m.Subj, reply: ack, hdr: o.pinHdr(p.wr, m.Hdr), msg: bytes.Clone(m.Msg)})
	}
	o.queueOutLocked(sends)
	o.releaseLocked(p, out.Deliveries)
}

// releaseLocked ends p's reservation: what was not delivered goes back
// to its request.
func (o *consumer) releaseLocked(p *deliverProp, delivered []cstate.Delivery) {
	l, wr := o.lead, p.wr
	j := 0
	for i, seq := range p.seqs {
		if p.re[i] {
			delete(l.redeliv, seq)
		} else {
			l.firsts--
		}
		// The deliveries are a subsequence of seqs, in their order.
		if j < len(delivered) && delivered[j].SSeq == seq {
			j++
			continue
		}
		if wr != nil {
			wr.n++
			wr.b += p.sizes[i]
		}
	}
	if wr == nil { // a push consumer's
		o.releasePushLocked(p, delivered)
		return
	}
	wr.reserved -= len(p.seqs)
	if wr.reserved == 0 && (wr.n <= 0 || (wr.maxBytes && wr.b <= 0)) {
		o.removeRequestLocked(wr)
	}
}

// ackLeaderLocked proposes an ack received by the leader; an AckNext
// queues its pull request behind it.
func (o *consumer) ackLeaderLocked(e *cstate.Entry, kind cstate.AckKind, reply string, arg []byte) []outMsg {
	if o.lead == nil {
		return nil // not leading (any more): the client's ack goes to the new leader when it retries
	}
	e.TS = o.now().UnixNano()
	r := ""
	if reply != "" && kind != cstate.AckNext {
		r = reply
	}
	o.proposeLocked(e, r, 0)
	if kind == cstate.AckNext && reply != "" {
		return o.addRequestLocked(reply, bytes.Clone(arg), nil)
	}
	return nil
}

// redeliverDueLeaderLocked: the ack wait fired on the leader; the apply
// decides what is due. If the entry is lost the timer tries again.
func (o *consumer) redeliverDueLeaderLocked() {
	if o.lead == nil {
		return
	}
	o.proposeLocked(&cstate.Entry{Op: cstate.OpRedeliverDue, TS: o.now().UnixNano()}, "", 0)
	o.ackAt = o.now().Add(time.Second).UnixNano()
	o.ackT.Reset(time.Second)
}

// idleLeaderLocked: an idle consumer is deleted through the log.
func (o *consumer) idleLeaderLocked() {
	if o.lead == nil {
		return
	}
	o.proposeLocked(&cstate.Entry{Op: cstate.OpDelete, TS: o.now().UnixNano()}, "", 0)
	o.active = o.now()
	o.idleT.Reset(o.cfg.InactiveThreshold)
}
