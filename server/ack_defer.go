package server

import (
	"slices"
	"strings"
)

// With the opt-out sync_interval a file stream acknowledges a publish only
// once the message has been handed to the operating system, so killing the
// process loses no acknowledged write. Publishes from one read buffer
// share one write: the acks wait in the publisher's read batch hook
// (client.go readBatchHook) until the buffer is parsed, then each stream is
// flushed once and the acks go out. In the durable default the acks of a
// read buffer are handed to the stream's group commit (stream_sync.go) at
// the end of the read, so one fsync covers the whole buffer.

type deferredAck struct {
	mset  *stream
	reply string
	ack   []byte
	sync  *groupCommit // non-nil: the ack waits for this group commit's fsync
}

// ackBatch is a client's deferred acks: its read batch hook.
type ackBatch struct {
	acks    []deferredAck
	flushed []*stream // scratch for readBatchEnd
}

// deferAck holds an ack until the end of c's current read (read loop only).
func deferAck(c *client, mset *stream, reply string, ack []byte) {
	b := readHook[ackBatch](c)
	b.acks = append(b.acks, deferredAck{mset: mset, reply: strings.Clone(reply), ack: ack})
}

// deferSyncedAck holds an ack until the end of c's current read, then
// hands it to the stream's group commit: the fsync starts once the whole
// read is stored, so one covers every publish of the read (read loop only).
func deferSyncedAck(c *client, mset *stream, g *groupCommit, reply string, ack []byte) {
	b := readHook[ackBatch](c)
	b.acks = append(b.acks, deferredAck{mset: mset, reply: strings.Clone(reply), ack: ack, sync: g})
}

// readBatchEnd flushes every stream the read stored into, then sends the
// acks (errors if a flush failed).
func (b *ackBatch) readBatchEnd(c *client) {
	if len(b.acks) == 0 {
		return
	}
	var failed map[*stream]error
	for _, a := range b.acks {
		if a.sync != nil || slices.Contains(b.flushed, a.mset) {
			continue
		}
		b.flushed = append(b.flushed, a.mset)
		if err := a.mset.storeSafely("flush", a.mset.st().Flush); err != nil {
			if failed == nil {
				failed = map[*stream]error{}
			}
			failed[a.mset] = err
		}
	}
	for i, a := range b.acks {
		if a.sync != nil {
			a.sync.queue(a.reply, a.ack)
			b.acks[i] = deferredAck{sync: a.sync} // kept to signal below
			continue
		}
		ack := a.ack
		if err := failed[a.mset]; err != nil {
			ack = a.mset.pubAckJSON(pubOutcome{err: errStoreFailed(err)}, "")
		}
		c.srv.deliver(c, a.mset.jsa.acc, a.reply, "", nil, ack)
		b.acks[i] = deferredAck{}
	}
	for i, a := range b.acks { // one signal per group commit, after all are queued
		if a.sync != nil {
			if !slices.ContainsFunc(b.acks[:i], func(o deferredAck) bool { return o.sync == a.sync }) {
				a.sync.signal()
			}
		}
	}
	clear(b.acks)
	b.acks = b.acks[:0]
	clear(b.flushed)
	b.flushed = b.flushed[:0]
}
