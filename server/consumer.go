package server

import (
	"encoding/json"
	"time"

	"github.com/nats-io/nats-server/v2/internal/clock"
	cstate "github.com/nats-io/nats-server/v2/internal/consumer"
)

// consumer is a pull or push consumer of a stream on one server. Everything in it
// is guarded by its stream's mu (no lock of its own): its durable state
// is a cstate.State changed only through apply, in the order the stream
// applies messages, so a replicated stream will only change where the
// entries come from (its raft log instead of this server's calls). The
// rest is leader-only soft state rebuilt from the State: waiting pull
// requests, the redelivery queue and the timers.
type consumer struct {
	mset    *stream
	name    string
	cfg     *ConsumerConfig // normalised, as echoed; replaced by updates
	created time.Time
	state   cstate.State
	out     cstate.Outcome // reused by apply

	waiting  []*pullRequest      // FIFO, at most cfg.MaxWaiting
	rdq      []uint64            // stream seqs handed back for redelivery (Outcome.Due)
	queued   map[uint64]struct{} // what rdq holds: each seq once, so rdq ≤ pending
	ackT     clock.Timer         // fires at the earliest ack-wait deadline
	ackAt    int64
	dirty    bool        // state changed since it was last saved (file streams)
	saveT    clock.Timer // saves a dirty state within consumerSaveEvery
	idleT    clock.Timer // inactive_threshold: deletes the consumer once idle that long
	pauseT   clock.Timer // ends the pause in force (consumer_pause.go)
	pinT     clock.Timer // ends the pin after priority_timeout (consumer_priority.go)
	pinGroup string      // the group of the pin in force (its advisories')
	pinLead  *pinLead    // replicated stream, on the leader: the pin proposed, not applied yet
	// unpinReason is the unpinned advisory's reason while OpUnpin applies.
	unpinReason string
	active      time.Time            // last pull request (server clock)
	outq        []outMsg             // decided, not yet sent (flushOut)
	flushing    bool                 // a goroutine is draining outq
	wake        map[*client]struct{} // flushOut: receivers to wake after a batch (the flusher's only)
	closed      bool
	local       bool          // replicated stream: off the log, on its leader only (consumer_local.go)
	lead        *consumerLead // replicated stream: set while this server leads it (consumer_cluster_lead.go)
	push        *pushState    // nil for a pull consumer (consumer_push.go)
	lss         []uint64      // last_per_subject: the initial messages still to deliver (consumer_lps.go)
	lssEnd      uint64        // last_per_subject: the stream's last sequence at creation, 0 when unknown
}

// stateConfig is the part of cfg the state machine reads, and the whole
// normalised config as Raw.
func stateConfig(cfg *ConsumerConfig) *cstate.Config {
	raw, _ := json.Marshal(cfg)
	c := &cstate.Config{
		AckPolicy:      cstate.AckPolicy(cfg.AckPolicy),
		DeliverPolicy:  cstate.DeliverPolicy(cfg.DeliverPolicy),
		OptStartSeq:    cfg.OptStartSeq,
		AckWait:        int64(cfg.AckWait),
		MaxDeliver:     int64(cfg.MaxDeliver),
		MaxAckPending:  int64(cfg.MaxAckPending),
		FilterSubjects: cfg.filters(),
		Raw:            raw,
	}
	if cfg.OptStartTime != nil {
		c.OptStartTime = cfg.OptStartTime.UnixNano()
	}
	if cfg.PauseUntil != nil {
		c.PauseUntil = cfg.PauseUntil.UnixNano()
	}
	for _, b := range cfg.BackOff {
		c.BackOff = append(c.BackOff, int64(b))
	}
	return c
}

// now is the server clock's time.
func (o *consumer) now() time.Time { return o.mset.jsa.js.srv.clock.Now() }

// applyLocked applies one entry to the consumer's state: on one server the
// "log" is this call, made under the stream's lock. The outcome is valid
// until the next apply.
func (o *consumer) applyLocked(e *cstate.Entry) *cstate.Outcome {
	e.Consumer = o.name
	var floor uint64
	var filters []string
	if e.Op == cstate.OpDelete || e.Op == cstate.OpUpdate { // what retention needs to know of before
		floor, filters = o.state.InterestFloor(), o.state.Config().FilterSubjects
	}
	var sample cstate.Pending
	sampled := false
	if e.Op == cstate.OpAck && o.cfg.SampleFrequency != "" && o.cfg.AckPolicy == AckExplicit {
		sample, sampled = o.state.PendingOf(e.Seq)
	}
	o.state.Apply(e, o.sourceLocked(), &o.out)
	o.mset.retainLocked(o, e, &o.out, floor, filters)
	// Advisories and ack metrics are the stream leader's to send: every
	// replica applies the entry, one speaks.
	if speaks := !o.mset.replicated || o.mset.leader; speaks {
		if sampled && len(o.out.Acked) > 0 {
			o.sampleAckLocked(e.Seq, e.CSeq, sample)
		}
		o.eventsLocked(o.out.Events)
	}
	if o.out.Changed {
		o.markDirtyLocked()
	}
	if o.leadsLocked() { // the redelivery queue is the leader's
		for _, seq := range o.out.Due {
			o.queueLocked(seq)
		}
	}
	return &o.out
}

// queueLocked puts seq in the redelivery queue unless it is there.
func (o *consumer) queueLocked(seq uint64) {
	if _, ok := o.queued[seq]; ok {
		return
	}
	if o.queued == nil {
		o.queued = make(map[uint64]struct{})
	}
	o.queued[seq] = struct{}{}
	o.rdq = append(o.rdq, seq)
}

// popLocked takes the head of the redelivery queue.
func (o *consumer) popLocked() uint64 {
	seq := o.rdq[0]
	o.rdq = o.rdq[1:]
	delete(o.queued, seq)
	if len(o.rdq) == 0 {
		o.rdq = nil // let the array go
	}
	return seq
}

// info reports the consumer as CONSUMER.INFO does. Called under mset.mu.
func (o *consumer) infoLocked() *ConsumerInfo {
	now := o.now()
	ci := newConsumerInfo(o.mset.name, o.name, withServerMetadata(o.cfg, VERSION, JetStreamAPILevel), 0, o.created, now)
	d, f := o.state.Delivered(), o.state.AckFloor()
	ld, la := o.state.LastActive()
	ci.Delivered = SequenceInfo{Consumer: d.Consumer, Stream: d.Stream, Last: stamp(ld)}
	ci.AckFloor = SequenceInfo{Consumer: f.Consumer, Stream: f.Stream, Last: stamp(la)}
	ci.NumAckPending = o.state.NumAckPending()
	ci.NumRedelivered = o.state.NumRedelivered()
	ci.NumWaiting = len(o.waiting)
	ci.NumPending = o.numPendingLocked()
	ci.PushBound = o.push != nil && o.push.active
	o.priorityInfoLocked(ci)
	return ci
}

func stamp(ns int64) *time.Time {
	if ns == 0 {
		return nil
	}
	t := time.Unix(0, ns).UTC()
	return &t
}

// armAckTimerLocked arms the ack-wait timer for the earliest deadline of
// a pending message (nothing when none is pending).
func (o *consumer) armAckTimerLocked() {
	if o.ackAt > 0 && len(o.cfg.BackOff) == 0 {
		// Armed: with one ack wait, a new delivery's deadline is later than
		// the armed one, and the timer re-arms for the next when it fires.
		// A nak with a delay (possibly earlier) clears ackAt first.
		return
	}
	if !o.leadsLocked() {
		return
	}
	at, ok := o.state.NextDeadline(func(seq uint64) bool {
		_, q := o.queued[seq]
		if !q && o.lead != nil {
			_, q = o.lead.redeliv[seq]
		}
		return q
	})
	if !ok || o.closed {
		return
	}
	clk := o.mset.jsa.js.srv.clock
	wait := max(time.Duration(at-clk.Now().UnixNano()), time.Millisecond)
	o.ackAt = at
	if o.ackT != nil {
		o.ackT.Reset(wait)
		return
	}
	o.ackT = clk.AfterFunc(wait, o.ackWaitFired)
}

// ackWaitFired applies a RedeliverDue entry (the apply decides what is
// due) and delivers what it handed back to waiting requests.
func (o *consumer) ackWaitFired() {
	mset := o.mset
	mset.mu.Lock()
	if o.closed {
		mset.mu.Unlock()
		return
	}
	if o.viaLog() {
		o.redeliverDueLeaderLocked()
		mset.mu.Unlock()
		return
	}
	o.ackAt = 0
	o.applyLocked(&cstate.Entry{Op: cstate.OpRedeliverDue, TS: o.now().UnixNano()})
	sends := o.pumpLocked(nil)
	o.armAckTimerLocked()
	o.queueOutLocked(sends)
	mset.mu.Unlock()
	o.flushOut()
}

// stopLocked stops the consumer's timers and drops its waiting requests
// (sending them status when deleted is the caller's choice).
func (o *consumer) stopLocked() []outMsg {
	o.closed = true
	if o.push != nil {
		o.stopPushLocked()
		o.mset.jsa.acc.unwatchDeliver(o)
	}
	for _, t := range []clock.Timer{o.ackT, o.saveT, o.idleT, o.pauseT, o.pinT} {
		if t != nil {
			t.Stop()
		}
	}
	var sends []outMsg
	for _, wr := range o.waiting {
		wr.stop()
	}
	o.waiting = nil
	return sends
}
