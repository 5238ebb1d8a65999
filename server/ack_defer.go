package server

import (
	"slices"
	"strings"
)

// A file stream acknowledges a publish only once the message has been
// handed to the operating system, so killing the process loses no
// acknowledged write. Publishes from one read buffer share one write: the
// acks wait in the publisher's read loop until the buffer is parsed, then
// each stream is flushed once and the acks go out.

type deferredAck struct {
	mset  *stream
	reply string
	ack   []byte
}

// deferAck holds an ack until the end of the current read (read loop only).
func (c *client) deferAck(mset *stream, reply string, ack []byte) {
	c.jsAcks = append(c.jsAcks, deferredAck{mset: mset, reply: strings.Clone(reply), ack: ack})
}

// flushJSAcks flushes every stream the read stored into, then sends the
// acks (errors if a flush failed).
func (c *client) flushJSAcks() {
	if len(c.jsAcks) == 0 {
		return
	}
	var flushed []*stream
	var failed map[*stream]error
	for _, a := range c.jsAcks {
		if slices.Contains(flushed, a.mset) {
			continue
		}
		flushed = append(flushed, a.mset)
		if err := a.mset.st().Flush(); err != nil {
			if failed == nil {
				failed = map[*stream]error{}
			}
			failed[a.mset] = err
		}
	}
	for i, a := range c.jsAcks {
		ack := a.ack
		if err := failed[a.mset]; err != nil {
			ack = a.mset.pubAckJSON(pubOutcome{err: errStoreFailed(err)}, "")
		}
		c.srv.deliver(c, a.mset.jsa.acc, a.reply, "", nil, ack)
		c.jsAcks[i] = deferredAck{}
	}
	c.jsAcks = c.jsAcks[:0]
}
