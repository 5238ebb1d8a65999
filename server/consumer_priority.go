package server

import (
	"encoding/json"
	"errors"
	"slices"
	"time"

	cstate "github.com/nats-io/nats-server/v2/internal/consumer"
	"github.com/nats-io/nuid"
)

// Priority groups of pull consumers (ADR-42), as nats-server serves them:
//   - overflow: a request with min_pending / min_ack_pending is served only
//     while the consumer has at least that many messages pending / unacked;
//   - pinned_client: the first request that gets a message pins a new id
//     (OpPin, a PINNED advisory, the Nats-Pin-Id header on every message);
//     only requests naming it are served, others naming another id get 423;
//     the pin ends after priority_timeout without a request from it (the
//     timer applies OpUnpin with the id it saw) or by CONSUMER.UNPIN;
//   - prioritized: requests wait in order of priority (0 first).
// Which request gets a message is leader-only soft state; the pin is state.

// JSPullRequestNatsPinId is the header carrying the pinned id.
const JSPullRequestNatsPinId = "Nats-Pin-Id"

// Pin advisories.
const (
	JSAdvisoryConsumerPinnedPre         = "$JS.EVENT.ADVISORY.CONSUMER.PINNED"
	JSAdvisoryConsumerUnpinnedPre       = "$JS.EVENT.ADVISORY.CONSUMER.UNPINNED"
	JSConsumerGroupPinnedAdvisoryType   = "io.nats.jetstream.advisory.v1.consumer_group_pinned"
	JSConsumerGroupUnpinnedAdvisoryType = "io.nats.jetstream.advisory.v1.consumer_group_unpinned"
)

// JSConsumerGroupPinnedAdvisory: a client was pinned.
type JSConsumerGroupPinnedAdvisory struct {
	TypedEvent
	Account        string `json:"account,omitempty"`
	Stream         string `json:"stream"`
	Consumer       string `json:"consumer"`
	Domain         string `json:"domain,omitempty"`
	Group          string `json:"group"`
	PinnedClientId string `json:"pinned_id"`
}

// JSConsumerGroupUnpinnedAdvisory: a pin ended ("admin" or "timeout").
type JSConsumerGroupUnpinnedAdvisory struct {
	TypedEvent
	Account  string `json:"account,omitempty"`
	Stream   string `json:"stream"`
	Consumer string `json:"consumer"`
	Domain   string `json:"domain,omitempty"`
	Group    string `json:"group"`
	Reason   string `json:"reason"`
}

// checkPriorityLocked refuses a request's priority fields as nats-server
// does (the status line to answer, or ""); a request naming the pinned id
// restarts the pin's timeout. pg is nil for a request that is not JSON.
func (o *consumer) checkPriorityLocked(pg *PriorityGroup) string {
	if pg == nil {
		return ""
	}
	pol := o.cfg.PriorityPolicy
	switch {
	case (pg.MinPending != 0 || pg.MinAckPending != 0) && pol != PriorityOverflow:
		return "400 Bad Request - Not a Overflow Priority consumer"
	case pg.Id != "" && pol != PriorityPinnedClient:
		return "400 Bad Request - Not a Pinned Client Priority consumer"
	case pg.Priority < 0 || pg.Priority > 9:
		return "400 Bad Request - Priority must be between 0 and 9"
	case pol == PriorityNone:
		return ""
	case pg.Group == "":
		return "400 Bad Request - Priority Group missing"
	case !slices.Contains(o.cfg.PriorityGroups, pg.Group):
		return "400 Bad Request - Invalid Priority Group"
	}
	if pin := o.effectivePinLocked(); pin != "" {
		if pg.Id == pin {
			o.armPinLocked(pin)
		} else if pg.Id != "" {
			return "423 Nats-Pin-Id mismatch"
		}
	}
	return ""
}

// enqueueLocked adds a request to the waiting list: in arrival order, or
// after every request of the same or a better priority (prioritized).
func (o *consumer) enqueueLocked(wr *pullRequest) {
	if o.cfg.PriorityPolicy != PriorityPrioritized || wr.pg == nil {
		o.waiting = append(o.waiting, wr)
		return
	}
	i := len(o.waiting)
	for i > 0 && (o.waiting[i-1].pg == nil || o.waiting[i-1].pg.Priority > wr.pg.Priority) {
		i--
	}
	o.waiting = slices.Insert(o.waiting, i, wr)
}

// pickLocked is the first waiting request that may get a message now
// (nil: none): requests nobody listens for any more are dropped, and under
// pinned_client requests naming a stale pin get 423 Nats-Wrong-Pin-Id.
func (o *consumer) pickLocked(sends []outMsg) (*pullRequest, []outMsg) {
	pin, _ := o.state.Pinned()
	for i := 0; i < len(o.waiting); {
		wr := o.waiting[i]
		if r := matchSubject(o.mset.jsa.acc, wr.reply); len(r.Plain) == 0 && len(r.Queues) == 0 {
			o.removeRequestLocked(wr) // its client went away: deliver nothing into the void
			continue
		}
		id := ""
		if wr.pg != nil {
			id = wr.pg.Id
		}
		switch o.cfg.PriorityPolicy {
		case PriorityPinnedClient:
			if id != "" && id != pin {
				o.removeRequestLocked(wr)
				sends = append(sends, pendingStatus(wr.reply, "423 Nats-Wrong-Pin-Id", wr.n, wr.b))
				continue
			}
			if pin != "" && id == "" {
				i++ // waits for the pin to end
				continue
			}
		case PriorityOverflow:
			if !o.overflowsLocked(wr.pg) {
				i++
				continue
			}
		}
		return wr, sends
	}
	return nil, sends
}

// overflowsLocked: an overflow request's thresholds let it be served.
func (o *consumer) overflowsLocked(pg *PriorityGroup) bool {
	if pg == nil || (pg.MinPending <= 0 && pg.MinAckPending <= 0) {
		return true
	}
	if pg.MinPending > 0 && uint64(pg.MinPending) <= o.state.NumPending(storeSource{o.mset.st()}) {
		return true
	}
	return pg.MinAckPending > 0 && pg.MinAckPending <= int64(o.state.NumAckPending())
}

// pinLocked pins a new id for the request about to get a message, when
// the consumer is pinned_client and nobody is pinned; it returns the pin
// the message carries ("" when none).
func (o *consumer) pinLocked(wr *pullRequest) string {
	if o.cfg.PriorityPolicy != PriorityPinnedClient {
		return ""
	}
	if pin, _ := o.state.Pinned(); pin != "" || wr.pg == nil || wr.pg.Group == "" {
		return pin
	}
	o.pinGroup = wr.pg.Group
	out := o.applyLocked(&cstate.Entry{Op: cstate.OpPin, TS: o.now().UnixNano(), Text: nuid.Next()})
	if out.Err != nil {
		return ""
	}
	pin, _ := o.state.Pinned()
	wr.pg.Id = pin
	o.armPinLocked(pin)
	return pin
}

// armPinLocked (re)starts the pin's timeout.
func (o *consumer) armPinLocked(pin string) {
	d := o.cfg.PinnedTTL
	if d <= 0 || o.closed {
		return
	}
	if o.pinT != nil {
		o.pinT.Stop()
	}
	o.pinT = o.mset.jsa.js.srv.clock.AfterFunc(d, func() { o.pinExpired(pin) })
}

// pinExpired proposes the end of the pin it was armed for.
func (o *consumer) pinExpired(pin string) {
	mset := o.mset
	mset.mu.Lock()
	if o.closed {
		mset.mu.Unlock()
		return
	}
	if o.viaLog() {
		o.pinExpiredLeaderLocked(pin)
		mset.mu.Unlock()
		return
	}
	o.unpinLocked(pin, "timeout")
	o.queueOutLocked(o.pumpLocked(nil))
	mset.mu.Unlock()
	o.flushOut()
}

// unpinLocked applies OpUnpin (of pin, or of any pin when ""), with the
// reason the advisory gives.
func (o *consumer) unpinLocked(pin, reason string) {
	o.unpinReason = reason
	o.applyLocked(&cstate.Entry{Op: cstate.OpUnpin, TS: o.now().UnixNano(), Text: pin})
	o.unpinReason = ""
	if cur, _ := o.state.Pinned(); cur == "" && o.pinT != nil {
		o.pinT.Stop()
	}
}

// pinEventLocked queues the PINNED / UNPINNED advisory of ev.
func (o *consumer) pinEventLocked(ev cstate.Event, dom string) {
	group := o.pinGroup
	if group == "" && len(o.cfg.PriorityGroups) > 0 {
		group = o.cfg.PriorityGroups[0]
	}
	acc := o.mset.jsa.acc.Name
	if ev.Kind == cstate.EventPinned {
		o.queueAdvisoryLocked(JSAdvisoryConsumerPinnedPre, func() any {
			return &JSConsumerGroupPinnedAdvisory{TypedEvent: o.typedEvent(JSConsumerGroupPinnedAdvisoryType), Account: acc,
				Stream: o.mset.name, Consumer: o.name, Domain: dom, Group: group, PinnedClientId: ev.Text}
		})
		return
	}
	reason := o.unpinReason
	if reason == "" { // a pin ended by a new term: nats-server tells nothing
		return
	}
	o.queueAdvisoryLocked(JSAdvisoryConsumerUnpinnedPre, func() any {
		return &JSConsumerGroupUnpinnedAdvisory{TypedEvent: o.typedEvent(JSConsumerGroupUnpinnedAdvisoryType), Account: acc,
			Stream: o.mset.name, Consumer: o.name, Domain: dom, Group: group, Reason: reason}
	})
}

// priorityInfoLocked fills ConsumerInfo's priority_groups with the pin.
func (o *consumer) priorityInfoLocked(ci *ConsumerInfo) {
	if len(ci.PriorityGroups) == 0 {
		return
	}
	if pin, ts := o.state.Pinned(); pin != "" {
		ci.PriorityGroups[0].PinnedClientID = pin
		ci.PriorityGroups[0].PinnedTS = time.Unix(0, ts).UTC()
	}
}

// consumerUnpin handles CONSUMER.UNPIN.<stream>.<consumer> {"group": ...}.
func (r *apiRequest) consumerUnpin() any {
	fail := func(e *ApiError) any { return &JSApiConsumerUnpinResponse{apiResponse: apiResponse{Error: e}} }
	sname, cname, ok := r.twoTokens("CONSUMER.UNPIN.")
	if !ok {
		return fail(errBadRequest())
	}
	if mset := r.jsa.lookup(sname); mset != nil && mset.replicated {
		// nats-server's cluster checks the consumer before the request
		mset.mu.Lock()
		o := mset.consumers[cname]
		missing := o == nil || o.closed
		mset.mu.Unlock()
		if missing {
			return fail(errConsumerNotFound())
		}
	}
	var req JSApiConsumerUnpinRequest
	if err := json.Unmarshal(r.body, &req); err != nil {
		return fail(errInvalidJSON(err))
	}
	if req.Group == "" {
		return fail(errInvalidJSON(errors.New("consumer group not specified")))
	}
	if !validGroupName.MatchString(req.Group) {
		return fail(errConsumerInvalidGroupName())
	}
	mset, e := r.consumerStream(sname)
	if e != nil {
		return fail(e)
	}
	mset.mu.Lock()
	o := mset.consumers[cname]
	if o == nil || o.closed {
		mset.mu.Unlock()
		return fail(errConsumerNotFound())
	}
	if !slices.Contains(o.cfg.PriorityGroups, req.Group) {
		mset.mu.Unlock()
		return fail(errConsumerInvalidPriorityGroup())
	}
	o.pinGroup = req.Group
	if o.viaLog() { // every replica applies it; the leader answers
		mset.mu.Unlock()
		return r.proposeConsumerUnpin(mset, cname)
	}
	if pin, _ := o.state.Pinned(); pin == "" { // nats-server tells even when nobody was pinned
		o.unpinReason = "admin"
		o.pinEventLocked(cstate.Event{Kind: cstate.EventUnpinned}, o.mset.jsa.js.srv.getOpts().JetStreamDomain)
	}
	o.unpinLocked("", "admin")
	o.queueOutLocked(o.pumpLocked(nil))
	mset.mu.Unlock()
	o.flushOut()
	return &JSApiConsumerUnpinResponse{}
}
