package server

// Local consumers: an ephemeral AckNone consumer of a replicated stream
// (what nats.go's ordered consumers, KV watch/keys/history and object
// get/list/watch make) has no durable state worth a log: it runs on the
// stream's leader only, created there without a log entry, and delivers
// as on one server (applyLocked under the stream's lock, sent after it).
// Its state is in no snapshot and no digest (followers never have it); it
// is deleted when the leader stops leading (its waiting requests get 409
// Consumer Deleted), and nats.go recreates an ordered consumer from the
// next stream sequence it expects once heartbeats stop or a gap shows.

// offLogConsumer reports whether a create of cfg on a replicated stream
// makes a local consumer: ephemeral, no acks, at most one replica.
func offLogConsumer(cfg *ConsumerConfig) bool {
	return cfg.Durable == "" && cfg.AckPolicy == AckNone && cfg.Replicas <= 1
}

// createsLocal reports whether a create of cfg makes (or updates) a local
// consumer of the replicated stream: a consumer of that name through the
// log is updated through the log.
func (mset *stream) createsLocal(cfg *ConsumerConfig) bool {
	if !offLogConsumer(cfg) {
		return false
	}
	mset.mu.Lock()
	defer mset.mu.Unlock()
	o := mset.consumers[consumerNameOf(cfg)]
	return o == nil || o.local
}

// isLocalConsumer reports whether the named consumer is local.
func (mset *stream) isLocalConsumer(name string) bool {
	mset.mu.Lock()
	defer mset.mu.Unlock()
	o := mset.consumers[name]
	return o != nil && o.local
}

// dropLocalConsumersLocked deletes the local consumers as the leader stops
// leading; it returns the ones to flush after the lock.
func (mset *stream) dropLocalConsumersLocked() []*consumer {
	var flush []*consumer
	for _, o := range mset.consumerListLocked() {
		if o.local {
			o.queueOutLocked(mset.deleteConsumerLocked(o))
			flush = append(flush, o)
		}
	}
	return flush
}

// logConsumersLocked is consumerListLocked without the local consumers:
// what snapshots and digests hold.
func (mset *stream) logConsumersLocked() []*consumer {
	all := mset.consumerListLocked()
	out := all[:0]
	for _, o := range all {
		if !o.local {
			out = append(out, o)
		}
	}
	return out
}
