package server

import (
	"sort"

	cstate "github.com/nats-io/nats-server/v2/internal/consumer"
)

// addConsumerLocked registers o with its stream; the caller then calls
// ensureAckSub without the lock.
func (mset *stream) addConsumerLocked(o *consumer) {
	if mset.consumers == nil {
		mset.consumers = make(map[string]*consumer)
	}
	mset.consumers[o.name] = o
}

// ensureAckSub makes the stream listen on $JS.ACK.<stream>.> (once).
// Called without mset.mu: subscribing takes the account's locks.
func (mset *stream) ensureAckSub() {
	mset.mu.Lock()
	have := mset.ackSub != nil || mset.closed
	mset.mu.Unlock()
	if have {
		return
	}
	acc := mset.jsa.acc
	sub, err := acc.subscribeInternal("$JS.ACK."+mset.name+".>", "", mset.ackMsg)
	if err != nil {
		mset.jsa.js.srv.Errorf("JetStream: stream %q cannot listen for acks: %v", mset.name, err)
		return
	}
	mset.mu.Lock()
	keep := mset.ackSub == nil && !mset.closed
	if keep {
		mset.ackSub = sub
	}
	mset.mu.Unlock()
	if !keep {
		acc.unsubscribe(sub)
	}
}

// consumerList returns the stream's consumers sorted by name.
func (mset *stream) consumerListLocked() []*consumer {
	out := make([]*consumer, 0, len(mset.consumers))
	for _, o := range mset.consumers {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// stopConsumersLocked stops every consumer as the stream stops: saving
// the durable ones' state when keep, else (the stream is deleted) queueing
// 409 Consumer Deleted for their waiting requests and a deleted advisory. It returns the
// ack subscriptions to remove (nil ones among them) and the consumers to flush after the lock.
func (mset *stream) stopConsumersLocked(keep bool) ([]*subscription, []*consumer) {
	var flush []*consumer
	for _, o := range mset.consumers {
		if keep && o.dirty {
			if err := o.saveStateLocked(); err != nil {
				mset.jsa.js.srv.Errorf("JetStream: saving consumer %q > %q: %v", mset.name, o.name, err)
			}
		}
		if !keep {
			o.queueOutLocked(o.releaseRequestsLocked())
			o.eventsLocked([]cstate.Event{{Kind: cstate.EventDeleted}}) // deleted with its stream
		}
		if len(o.outq) > 0 {
			flush = append(flush, o)
		}
		o.stopLocked()
	}
	mset.consumers = nil
	subs := []*subscription{mset.ackSub, mset.fcSub}
	mset.ackSub, mset.fcSub = nil, nil
	return subs, flush
}

// nats-server's reasons for a pending message that left the stream.
const (
	reasonDeleted = "Unacknowledged message was deleted"
	reasonLimits  = "Message deleted by stream limits"
)

// consumersTrimmedLocked: the stream's head may have moved (limits,
// max_age): pending messages below the new first sequence are gone.
// O(1) per consumer unless something pending is below it.
func (mset *stream) consumersTrimmedLocked() {
	if len(mset.consumers) == 0 {
		return
	}
	first, _ := storeSource{mset.st()}.Bounds()
	for _, o := range mset.consumers {
		if gone := o.state.PendingBelow(first); len(gone) > 0 {
			o.applyLocked(&cstate.Entry{Op: cstate.OpStreamRemoved, TS: mset.derivedTS(), Seqs: gone, Text: reasonLimits})
		}
	}
}

// consumersRemovedLocked: message seq was deleted.
func (mset *stream) consumersRemovedLocked(seq uint64) {
	for _, o := range mset.consumers {
		o.applyLocked(&cstate.Entry{Op: cstate.OpStreamRemoved, TS: mset.derivedTS(), Seqs: []uint64{seq}, Text: reasonDeleted})
	}
}

// consumersPurgedLocked: a purge. A purge of the head (no subject) moves
// every consumer past it; a subject purge takes messages from anywhere.
func (mset *stream) consumersPurgedLocked(subject bool) {
	src := storeSource{mset.st()}
	first, _ := src.Bounds()
	for _, o := range mset.consumers {
		ts := mset.derivedTS()
		if !subject {
			o.applyLocked(&cstate.Entry{Op: cstate.OpStreamPurged, TS: ts, Seq: first})
			continue
		}
		if gone := o.state.PendingMissing(func(seq uint64) bool { return !src.Contains(seq) }); len(gone) > 0 {
			o.applyLocked(&cstate.Entry{Op: cstate.OpStreamRemoved, TS: ts, Seqs: gone, Text: reasonDeleted})
		}
	}
}

// lookupConsumer finds a consumer by name.
func (mset *stream) lookupConsumer(name string) *consumer {
	mset.mu.Lock()
	defer mset.mu.Unlock()
	return mset.consumers[name]
}

// numConsumers is the stream's consumer count (STREAM.INFO, INFO).
func (mset *stream) numConsumers() int {
	mset.mu.Lock()
	defer mset.mu.Unlock()
	return len(mset.consumers)
}

// pumpConsumersLocked offers a newly stored message to the consumers with
// waiting requests; the caller flushes the ones returned after the lock.
func (mset *stream) pumpConsumersLocked() []*consumer {
	var out []*consumer
	for _, o := range mset.consumers {
		if len(o.waiting) > 0 || o.push != nil {
			o.queueOutLocked(o.pumpLocked(nil))
		}
		if len(o.outq) > 0 { // deliveries, or advisories of messages the limits removed
			out = append(out, o)
		}
	}
	return out
}

// flushConsumersOut sends what the stream's consumers queued (advisories
// of a delete, purge or expiry). Called without mset.mu.
func (mset *stream) flushConsumersOut() {
	mset.mu.Lock()
	var os []*consumer
	for _, o := range mset.consumers {
		if len(o.outq) > 0 {
			os = append(os, o)
		}
	}
	mset.mu.Unlock()
	flushConsumers(os)
}

func flushConsumers(os []*consumer) {
	for _, o := range os {
		o.flushOut()
	}
}
