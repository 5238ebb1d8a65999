package server

import (
	"slices"
	"strings"
)

// A file stream acknowledges a publish only once the message has been
// handed to the operating system, so killing the process loses no
// acknowledged write. Publishes from one read buffer share one write: the
// acks wait in the publisher's read batch hook (client.go readBatchHook)
// until the buffer is parsed, then each stream is flushed once and the acks
// go out.

type deferredAck struct {
	mset  *stream
	reply string
	ack   []byte
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

// readBatchEnd flushes every stream the read stored into, then sends the
// acks (errors if a flush failed).
func (b *ackBatch) readBatchEnd(c *client) {
	if len(b.acks) == 0 {
		return
	}
	var failed map[*stream]error
	for _, a := range b.acks {
		if slices.Contains(b.flushed, a.mset) {
			continue
		}
		b.flushed = append(b.flushed, a.mset)
		if err := a.mset.st().Flush(); err != nil {
			if failed == nil {
				failed = map[*stream]error{}
			}
			failed[a.mset] = err
		}
	}
	for i, a := range b.acks {
		ack := a.ack
		if err := failed[a.mset]; err != nil {
			ack = a.mset.pubAckJSON(pubOutcome{err: errStoreFailed(err)}, "")
		}
		c.srv.deliver(c, a.mset.jsa.acc, a.reply, "", nil, ack)
		b.acks[i] = deferredAck{}
	}
	b.acks = b.acks[:0]
	clear(b.flushed)
	b.flushed = b.flushed[:0]
}
