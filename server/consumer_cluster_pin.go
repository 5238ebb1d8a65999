package server

import (
	"encoding/json"
	"strings"
	"time"

	cstate "github.com/nats-io/nats-server/v2/internal/consumer"
	"github.com/nats-io/nuid"
)

// Pause and pin of a replicated stream's consumers, through the log:
//   - CONSUMER.PAUSE is an OpPause (a resume: OpResume with Until 0)
//     proposed by the leader; every replica sets pause_until in the config
//     at its apply (applyPauseLocked) and the leader answers after its own.
//     The leader's resume timer proposes OpResume with the pause it saw.
//   - pinned_client: the leader serves a request that needs a pin by
//     proposing OpPin with a new id right before the request's first
//     Deliver entry (log order: the pin is applied before the messages
//     that carry it go out). Until it is applied that id is the leader's
//     pin in flight (pinLead), which requests are checked against as
//     against the applied one. priority_timeout proposes OpUnpin with the
//     id it was armed for (reason "timeout"), CONSUMER.UNPIN proposes
//     OpUnpin of any id (reason "admin"): the reason follows from the
//     entry, so any leader that applies it tells the same.
//   - A new term resets every pin, on every replica, where the new
//     leader's no-op entry is applied, silently: nats-server keeps the pin
//     in the consumer leader's memory, so a new leader has none and the
//     old pin gets 423 Nats-Wrong-Pin-Id, without an UNPINNED advisory.
// Advisories are the leader's, as every consumer advisory (applyLocked).

// proposeConsumerPause proposes CONSUMER.PAUSE of a log consumer (the
// caller released the stream's lock); the leader answers after its apply,
// a refused proposal is answered "temporarily unavailable".
func (r *apiRequest) proposeConsumerPause(mset *stream, name string, until time.Time) any {
	e := &cstate.Entry{Op: cstate.OpResume, TS: mset.jsa.js.srv.clock.Now().UnixNano(), Consumer: name}
	if !until.IsZero() {
		e.Op, e.Until = cstate.OpPause, until.UnixNano()
	}
	mset.proposeConsumerEntry(e, strings.Clone(r.reply))
	return nil
}

// proposeConsumerUnpin proposes CONSUMER.UNPIN of a log consumer.
func (r *apiRequest) proposeConsumerUnpin(mset *stream, name string) any {
	e := &cstate.Entry{Op: cstate.OpUnpin, TS: mset.jsa.js.srv.clock.Now().UnixNano(), Consumer: name}
	mset.proposeConsumerEntry(e, strings.Clone(r.reply))
	return nil
}

// applyPausePinLocked applies the pause and pin entries of a replicated
// stream (ok false for other ops): the answer for the proposer (mine)
// and the consumer to flush.
func (mset *stream) applyPausePinLocked(ce *cstate.Entry, mine bool) (resp []byte, oc *consumer, ok bool) {
	switch ce.Op {
	case cstate.OpPause, cstate.OpResume, cstate.OpPin, cstate.OpUnpin:
	default:
		return nil, nil, false
	}
	o := mset.consumers[ce.Consumer]
	api := mine && (ce.Op == cstate.OpPause || (ce.Op == cstate.OpResume && ce.Until == 0) || (ce.Op == cstate.OpUnpin && ce.Text == ""))
	if o == nil || o.local {
		if api {
			return apiAnswer(ce.Op, &apiResponse{Error: errConsumerNotFound()}), nil, true
		}
		return nil, nil, true
	}
	switch ce.Op {
	case cstate.OpPause, cstate.OpResume:
		o.applyPauseLocked(ce)
		o.armPauseLocked()
	case cstate.OpPin:
		o.applyPinLocked(ce)
	case cstate.OpUnpin:
		o.applyUnpinLocked(ce)
	}
	if mset.leader {
		o.pumpLeaderLocked()
	}
	if !api {
		return nil, o, true
	}
	if ce.Op == cstate.OpUnpin {
		return apiAnswer(ce.Op, &JSApiConsumerUnpinResponse{}), o, true
	}
	pr := &JSApiConsumerPauseResponse{}
	if p := o.cfg.PauseUntil; p != nil {
		pr.PauseUntil = *p
		if now := o.now(); now.Before(*p) {
			pr.Paused, pr.PauseRemaining = true, p.Sub(now)
		}
	}
	return apiAnswer(ce.Op, pr), o, true
}

// apiAnswer renders a PAUSE or UNPIN answer with its type.
func apiAnswer(op cstate.Op, resp any) []byte {
	typ := consumerPauseResponseType
	if op == cstate.OpUnpin {
		typ = consumerUnpinResponseType
	}
	if ar, ok := resp.(*apiResponse); ok { // an error: the call's own response type
		if typ == consumerUnpinResponseType {
			resp = &JSApiConsumerUnpinResponse{apiResponse: *ar}
		} else {
			resp = &JSApiConsumerPauseResponse{apiResponse: *ar}
		}
	}
	setResponseType(resp, apiTypePrefix+typ)
	b, _ := json.Marshal(resp)
	return b
}

// pinLead is the leader's pin in flight: proposed, not applied yet.
type pinLead struct {
	id string
}

// effectivePinLocked is the pin requests are checked against: the applied
// one, else on the leader the one in flight.
func (o *consumer) effectivePinLocked() string {
	if pin, _ := o.state.Pinned(); pin != "" {
		return pin
	}
	if o.pinLead != nil {
		return o.pinLead.id
	}
	return ""
}

// applyPinLocked applies an OpPin; on the leader the pin in flight is
// settled and the pin's timeout (re)started.
func (o *consumer) applyPinLocked(ce *cstate.Entry) {
	o.applyLocked(ce)
	if o.pinLead != nil && o.pinLead.id == ce.Text {
		o.pinLead = nil
	}
	if pin, _ := o.state.Pinned(); pin != "" && o.lead != nil {
		o.armPinLocked(pin)
	}
}

// applyUnpinLocked applies an OpUnpin; nats-server tells an admin unpin
// even when nobody was pinned.
func (o *consumer) applyUnpinLocked(ce *cstate.Entry) {
	had, _ := o.state.Pinned()
	o.unpinReason = "timeout"
	if ce.Text == "" {
		o.unpinReason = "admin"
	}
	o.applyLocked(ce)
	if had == "" && ce.Text == "" && o.mset.leader {
		o.pinEventLocked(cstate.Event{Kind: cstate.EventUnpinned}, o.mset.jsa.js.srv.getOpts().JetStreamDomain)
	}
	o.unpinReason = ""
	if cur, _ := o.state.Pinned(); cur == "" && o.pinT != nil {
		o.pinT.Stop()
	}
}

// leadGateLocked decides, on the leader, whether a waiting request may be
// offered messages now under the consumer's priority policy: a status to
// end it with (423 for a stale pin), or wait to leave it waiting.
func (o *consumer) leadGateLocked(wr *pullRequest) (status string, wait bool) {
	switch o.cfg.PriorityPolicy {
	case PriorityOverflow:
		return "", !o.overflowsLocked(wr.pg)
	case PriorityPinnedClient:
		pin, id := o.effectivePinLocked(), ""
		if wr.pg != nil {
			id = wr.pg.Id
		}
		switch {
		case id != "" && id != pin:
			return "423 Nats-Wrong-Pin-Id", false
		case pin != "" && id == "":
			return "", true // waits for the pin to end
		}
	}
	return "", false
}

// pinForLocked is called on the leader right before a request's Deliver
// entry is proposed: a pinned_client request that needs a pin gets a new
// id, proposed first; it returns nothing, the request now names the id.
func (o *consumer) pinForLocked(wr *pullRequest) {
	if o.cfg.PriorityPolicy != PriorityPinnedClient || o.effectivePinLocked() != "" || wr.pg == nil || wr.pg.Group == "" {
		return
	}
	id := nuid.Next()
	o.pinLead = &pinLead{id: id}
	o.pinGroup = wr.pg.Group
	wr.pg.Id = id
	o.armPinLocked(id) // a pin whose entry got lost still ends
	o.proposeLocked(&cstate.Entry{Op: cstate.OpPin, TS: o.now().UnixNano(), Text: id}, "", 0)
}

// pinHdr is the headers a message to wr carries: the stored ones, with
// Nats-Pin-Id for a pinned request.
func (o *consumer) pinHdr(wr *pullRequest, hdr []byte) []byte {
	if o.cfg.PriorityPolicy == PriorityPinnedClient && wr != nil && wr.pg != nil && wr.pg.Id != "" {
		return appendHeaders(hdr, JSPullRequestNatsPinId, wr.pg.Id)
	}
	return append([]byte(nil), hdr...)
}

// pinExpiredLeaderLocked: priority_timeout fired on the leader for pin;
// the apply ends it if it still is the pin in force.
func (o *consumer) pinExpiredLeaderLocked(pin string) {
	if o.lead == nil {
		return
	}
	if o.pinLead != nil && o.pinLead.id == pin {
		o.pinLead = nil
	}
	o.proposeLocked(&cstate.Entry{Op: cstate.OpUnpin, TS: o.now().UnixNano(), Text: pin}, "", 0)
}

// startPausePinLeadingLocked arms the leader's pause and pin timers from
// the applied state.
func (o *consumer) startPausePinLeadingLocked() {
	o.pinLead = nil
	o.armPauseLocked()
	if pin, _ := o.state.Pinned(); pin != "" {
		o.armPinLocked(pin)
	}
}

// stopPausePinLeadingLocked stops them when it stops leading.
func (o *consumer) stopPausePinLeadingLocked() {
	o.pinLead = nil
	for _, t := range []interface{ Stop() bool }{o.pauseT, o.pinT} {
		if t != nil {
			t.Stop()
		}
	}
}

// termStarted: a new leader's no-op entry was applied (every replica
// applies it at the same index). Pins end there, silently.
func (mset *stream) termStarted() {
	mset.mu.Lock()
	defer mset.mu.Unlock()
	if mset.closed {
		return
	}
	for _, o := range mset.logConsumersLocked() {
		if pin, _ := o.state.Pinned(); pin != "" {
			o.unpinReason = "" // no advisory
			o.applyLocked(&cstate.Entry{Op: cstate.OpUnpin, TS: mset.derivedTS(), Text: pin})
			if o.pinT != nil {
				o.pinT.Stop()
			}
		}
	}
}
