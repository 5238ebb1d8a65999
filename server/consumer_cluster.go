package server

import (
	"encoding/json"
	"time"

	cstate "github.com/nats-io/nats-server/v2/internal/consumer"
)

// Consumers of a replicated stream live in the stream's raft log (see
// internal/consumer/doc.go): every change of their durable state is a
// streamOpConsumer entry carrying a cstate entry, applied on every replica
// by applyConsumerEntryLocked through consumer.applyLocked, the one apply
// point. The leader proposes (consumer_cluster_lead.go); the server that
// proposed an entry with a reply answers after its own apply, as for
// publishes. Nothing of a replicated consumer goes to obs/: its state is
// the log and the stream's snapshots (consumer_cluster_snap.go).

// proposeConsumerEntry proposes e (TS stamped by the caller) with the
// reply the proposer answers after its apply ("" for none).
func (mset *stream) proposeConsumerEntry(e *cstate.Entry, reply string) {
	s := mset.jsa.js.srv
	mset.propose(&streamEntry{op: streamOpConsumer, origin: s.Name(), reply: reply, cons: cstate.AppendEntry(nil, e)})
}

// applyConsumerEntryLocked applies one consumer entry of the stream's log
// at index; it returns the answer for the proposer's client (nil for
// none) and the consumer whose queued messages the caller flushes after
// the lock (nil for none). The caller holds mset.mu.
func (mset *stream) applyConsumerEntryLocked(se *streamEntry, index uint64) ([]byte, *consumer) {
	ce, err := cstate.DecodeEntry(se.cons)
	if err != nil {
		// Every replica refuses the same bytes the same way.
		mset.jsa.js.srv.Warnf("JetStream stream '%s > %s': consumer entry at %d refused: %v", mset.jsa.acc.Name, mset.name, index, err)
		return nil, nil
	}
	mset.applyTS = ce.TS
	mine := se.origin == mset.jsa.js.srv.Name() && se.reply != ""
	if ce.Op == cstate.OpCreate || ce.Op == cstate.OpUpdate {
		ce.Gen = index // unique and increasing on every replica
		resp, o := mset.applyConsumerConfigLocked(&ce)
		if cr, ok := resp.(*JSApiConsumerCreateResponse); ok && mine && cr.ConsumerInfo != nil {
			cr.ConsumerInfo.Cluster = mset.clusterInfoLocked() // as INFO's
		}
		if o != nil && mset.leader {
			o.pumpLeaderLocked()
		}
		return consumerRespIf(mine, resp), o
	}
	if resp, o, ok := mset.applyPausePinLocked(&ce, mine); ok { // consumer_cluster_pin.go
		return resp, o
	}
	o := mset.consumers[ce.Consumer]
	if o == nil {
		if ce.Op == cstate.OpDelete {
			return consumerRespIf(mine, &JSApiConsumerDeleteResponse{apiResponse: apiResponse{Error: errConsumerNotFound()}}), nil
		}
		return nil, nil
	}
	out := o.applyLocked(&ce)
	if ce.Op == cstate.OpDeliver {
		o.trimLastPerSubjectLocked()
	}
	switch {
	case ce.Op == cstate.OpDelete:
		o.queueOutLocked(mset.removeConsumerLocked(o))
		return consumerRespIf(mine, &JSApiConsumerDeleteResponse{Success: out.Err == nil}), o
	case ce.Op == cstate.OpDeliver && mset.leader:
		o.deliveredLocked(out)
	case (ce.Op == cstate.OpRedeliverDue || ce.Op == cstate.OpNak) && o.lead != nil:
		o.ackAt = 0 // re-armed below for the next deadline
	}
	var resp []byte
	if mine && out.Reply && out.Err == nil {
		resp = []byte{} // an AckSync is answered once its ack is applied
	}
	if mset.leader {
		o.pumpLeaderLocked()
	}
	return resp, o
}

// applyConsumerConfigLocked applies a Create or Update entry and returns
// the proposer's answer and the consumer.
func (mset *stream) applyConsumerConfigLocked(ce *cstate.Entry) (any, *consumer) {
	fail := func(e *ApiError) any { return &JSApiConsumerCreateResponse{apiResponse: apiResponse{Error: e}} }
	var cfg ConsumerConfig
	if ce.Config == nil || json.Unmarshal(ce.Config.Raw, &cfg) != nil {
		return fail(errConsumerCreate("malformed consumer configuration")), nil
	}
	o := mset.consumers[ce.Consumer]
	if o != nil && o.local { // made on the leader meanwhile: the log's consumer wins, alike everywhere
		o.queueOutLocked(mset.deleteConsumerLocked(o))
		go o.flushOut() // after this apply's lock
		o = nil
	}
	if ce.Op == cstate.OpUpdate {
		if o == nil {
			return fail(errConsumerDoesNotExist()), nil
		}
		if out := o.applyLocked(ce); out.Err != nil {
			return fail(errConsumerCreate(out.Err.Error())), o
		}
		o.cfg = &cfg
		if o.push != nil && o.lead != nil {
			o.updatePushLocked()
		} else if o.push != nil {
			o.push.subj = cfg.DeliverSubject
		}
		return &JSApiConsumerCreateResponse{ConsumerInfo: o.infoLocked()}, o
	}
	if o != nil { // created meanwhile: the same config is a success, another one is not
		if out := o.applyLocked(ce); out.Err != nil {
			return fail(errConsumerAlreadyExists()), o
		}
		return &JSApiConsumerCreateResponse{ConsumerInfo: o.infoLocked()}, o
	}
	o = &consumer{mset: mset, name: ce.Consumer, cfg: &cfg, created: time.Unix(0, ce.TS).UTC()}
	if out := o.applyLocked(ce); out.Err != nil {
		return fail(errConsumerCreate(out.Err.Error())), nil
	}
	if cfg.isPush() {
		o.push = &pushState{subj: cfg.DeliverSubject}
	}
	mset.addConsumerLocked(o)
	o.initLastPerSubjectLocked() // from the store at this index: alike on every replica
	if mset.leader {
		o.startLeadingLocked()
		o.pausedAdvisoryLocked() // as nats-server's new consumer leader
		if o.push != nil {
			go mset.ensureFCSub() // subscribing never under the stream's lock
		}
	}
	return &JSApiConsumerCreateResponse{ConsumerInfo: o.infoLocked()}, o
}

// removeConsumerLocked takes a deleted consumer out of the stream: its
// waiting requests get 409 Consumer Deleted (returned to queue).
func (mset *stream) removeConsumerLocked(o *consumer) []outMsg {
	sends := o.releaseRequestsLocked()
	o.stopLocked()
	delete(mset.consumers, o.name)
	return sends
}

// consumerRespIf renders resp for the proposer (mine) with its type.
func consumerRespIf(mine bool, resp any) []byte {
	if !mine || resp == nil {
		return nil
	}
	typ := consumerCreateResponseType
	if _, ok := resp.(*JSApiConsumerDeleteResponse); ok {
		typ = consumerDeleteResponseType
	}
	setResponseType(resp, apiTypePrefix+typ)
	b, _ := json.Marshal(resp)
	return b
}

// derivedTS is the stamp of a consumer entry the stream's apply derives
// (messages removed or purged): on a replicated stream the stamp of the
// last entry applied that carried one, never this server's clock, so
// every replica applies the same entry; on one server the clock.
func (mset *stream) derivedTS() int64 {
	if mset.replicated {
		return mset.applyTS
	}
	return mset.jsa.js.srv.clock.Now().UnixNano()
}
