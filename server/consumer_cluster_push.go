package server

import (
	"bytes"

	cstate "github.com/nats-io/nats-server/v2/internal/consumer"
)

// Push consumers of a replicated stream go through its log as pull ones
// do: the leader reserves the next messages while the deliver subject has
// interest (local or across a route), flow control leaves room and the
// pacing allows, proposes them as one Deliver entry, and sends what the
// apply let through to the deliver subject. Their pushState exists on
// every replica (made with the consumer, never replaced: interest
// rechecks read it without the lock) but only the leader fills it: it is
// reset when a leader becomes ready (interest, flow control window,
// heartbeat) and when it stops leading.

// pushBatchMax bounds the messages of one push Deliver entry.
const pushBatchMax = 64

// startPushLeadingLocked: the leader starts delivering a push consumer.
func (o *consumer) startPushLeadingLocked() {
	if o.push == nil {
		return
	}
	o.resetPushLocked()
	o.mset.jsa.acc.watchDeliver(o, o.push.subj)
	o.startPushLocked()
}

// stopPushLeadingLocked: the leader stops; the soft state goes.
func (o *consumer) stopPushLeadingLocked() {
	if o.push == nil {
		return
	}
	o.stopPushLocked()
	o.mset.jsa.acc.unwatchDeliver(o)
	o.resetPushLocked()
}

// resetPushLocked sets the soft state as a new push consumer has it
// (the timers are kept for reuse, stopped or not).
func (o *consumer) resetPushLocked() {
	p, n := o.push, o.newPushState()
	p.subj, p.active = n.subj, false
	p.fcid, p.pbytes, p.fcsz, p.maxpb, p.pblim = "", 0, 0, n.maxpb, n.pblim
	p.waiting, p.rateAt, p.replay, p.replayEnd = false, n.rateAt, n.replay, n.replayEnd
	p.lastTS, p.lastSent, p.scanned, p.more = 0, n.lastSent, 0, false
}

// pushProposeLocked is pushPumpLocked on a replicated stream.
func (o *consumer) pushProposeLocked(sends []outMsg) []outMsg {
	p, l := o.push, o.lead
	if l == nil || o.closed {
		return sends
	}
	var sm StoreMsg
	for p.active && !p.waiting && len(l.inflight) < deliverInflightMax {
		dp := o.reservePushLocked(&sm)
		if dp == nil {
			break
		}
		o.proposeDeliverLocked(dp)
		if len(dp.seqs) < pushBatchMax {
			break
		}
	}
	o.armAckTimerLocked()
	return sends
}

// reservePushLocked takes the next messages the push consumer may send
// (nil when none): flow control counts them now, pacing decides now.
func (o *consumer) reservePushLocked(sm *StoreMsg) *deliverProp {
	p, l := o.push, o.lead
	var dp *deliverProp
	for dp == nil || len(dp.seqs) < pushBatchMax {
		if p.maxpb > 0 && p.pbytes > p.maxpb {
			break // stalled until the client answers the flow control
		}
		m := o.nextLeadLocked(sm)
		if m == nil {
			if _, last := (storeSource{o.mset.st()}).Bounds(); dp == nil && l.firsts == 0 {
				p.scanned = max(p.scanned, last)
			}
			break
		}
		size := o.deliverySize(m, dp) + len(p.subj) - len(m.Subj)
		if wait := o.paceLocked(m, size); wait > 0 {
			o.requeueFrontLocked(m.Seq)
			o.armWaitLocked(wait)
			break
		}
		if dp == nil {
			dp = &deliverProp{}
		}
		_, re := o.state.PendingOf(m.Seq)
		if re {
			l.redeliv[m.Seq] = struct{}{}
		} else {
			l.firsts++
			l.cursor = m.Seq + 1
		}
		dp.seqs, dp.sizes, dp.re = append(dp.seqs, m.Seq), append(dp.sizes, size), append(dp.re, re)
		if p.maxpb > 0 {
			p.pbytes += size
		}
		if p.replay {
			p.lastTS, p.lastSent = m.TS, o.now()
			p.replay = m.Seq < p.replayEnd
		}
	}
	return dp
}

// pushDeliveredLocked sends what the apply of a push Deliver entry let
// through to the deliver subject, with flow control requests as the
// window fills.
func (o *consumer) pushDeliveredLocked(dp *deliverProp, out *cstate.Outcome) {
	p := o.push
	var sm StoreMsg
	sends := make([]outMsg, 0, len(out.Deliveries))
	k := 0 // the deliveries are a subsequence of dp.seqs, in their order
	for _, d := range out.Deliveries {
		for k < len(dp.seqs)-1 && dp.seqs[k] != d.SSeq {
			k++
		}
		m, err := o.mset.st().LoadMsg(d.SSeq, &sm)
		if err != nil {
			continue
		}
		hdr, msg := m.Hdr, m.Msg
		if o.cfg.HeadersOnly {
			hdr, msg = headersOnly(hdr, len(msg)), nil
		}
		ack := o.ackSubject(d, m.TS)
		sends = append(sends, outMsg{to: p.subj, subj: m.Subj, reply: ack, hdr: bytes.Clone(hdr), msg: bytes.Clone(msg)})
		if p.hbT != nil {
			p.hbT.Reset(o.cfg.Heartbeat)
		}
		if p.maxpb > 0 && o.needFlowControlLocked(dp.sizes[k]) {
			sends = append(sends, o.flowControlLocked())
		}
	}
	o.queueOutLocked(o.ackFCFullLocked(sends))
}

// releasePushLocked gives back the flow control bytes of what a push
// Deliver entry did not send.
func (o *consumer) releasePushLocked(dp *deliverProp, delivered []cstate.Delivery) {
	p := o.push
	j := 0
	for i, seq := range dp.seqs {
		if j < len(delivered) && delivered[j].SSeq == seq {
			j++
			continue
		}
		if p.maxpb > 0 {
			p.pbytes = max(p.pbytes-dp.sizes[i], 0)
		}
	}
}
