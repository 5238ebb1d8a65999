package consumer

import (
	"bytes"
	"slices"
)

// AckPolicy is how a consumer's messages are acknowledged.
type AckPolicy uint8

// Ack policies, as nats-server's ack_policy none, all, explicit.
const (
	AckNone AckPolicy = iota
	AckAll
	AckExplicit
	// AckFlowControl acks as AckAll, by the answers to a push consumer's
	// flow control requests, and never redelivers (nats-server's
	// flow_control policy, which its durable sourcing uses).
	AckFlowControl
)

// DeliverPolicy is where a new consumer starts in its stream.
type DeliverPolicy uint8

// Deliver policies, as nats-server's deliver_policy values.
const (
	DeliverAll DeliverPolicy = iota
	DeliverLast
	DeliverNew
	DeliverByStartSequence
	DeliverByStartTime
	DeliverLastPerSubject
)

// DefaultAckWait is the ack wait of a consumer whose AckWait is not set
// (nats-server's default, 30s).
const DefaultAckWait = int64(30_000_000_000)

// Config is the part of a consumer's configuration the state machine
// reads. Raw carries the whole normalised ConsumerConfig JSON of the API
// layer: opaque here, replicated and covered by the digest so every
// replica also agrees on the fields this package does not read.
type Config struct {
	AckPolicy      AckPolicy
	DeliverPolicy  DeliverPolicy
	OptStartSeq    uint64
	OptStartTime   int64   // unix nanoseconds, 0 when unset
	AckWait        int64   // nanoseconds; 0 means DefaultAckWait
	BackOff        []int64 // nanoseconds per delivery; overrides AckWait
	MaxDeliver     int64   // ≤ 0: unlimited
	MaxAckPending  int64   // ≤ 0: unlimited
	PauseUntil     int64   // unix nanoseconds, 0 when not paused
	FilterSubjects []string
	Raw            []byte
}

// wait is how long a message delivered dc times may stay unacknowledged:
// the backoff entry for its delivery count (the last one once the list is
// exhausted), else the ack wait.
func (c *Config) wait(dc uint64) int64 {
	if n := uint64(len(c.BackOff)); n > 0 {
		i := dc - 1
		if dc == 0 {
			i = 0
		}
		return max(c.BackOff[min(i, n-1)], 1)
	}
	if c.AckWait <= 0 {
		return DefaultAckWait
	}
	return c.AckWait
}

// equal reports whether two configurations are the same in every field.
func (c *Config) equal(o *Config) bool {
	return c.AckPolicy == o.AckPolicy && c.DeliverPolicy == o.DeliverPolicy &&
		c.OptStartSeq == o.OptStartSeq && c.OptStartTime == o.OptStartTime &&
		c.AckWait == o.AckWait && slices.Equal(c.BackOff, o.BackOff) &&
		c.MaxDeliver == o.MaxDeliver && c.MaxAckPending == o.MaxAckPending &&
		c.PauseUntil == o.PauseUntil && slices.Equal(c.FilterSubjects, o.FilterSubjects) &&
		bytes.Equal(c.Raw, o.Raw)
}

// updatable reports whether o may replace c: the ack policy and where the
// consumer started are fixed at creation (nats-server refuses to change
// them too).
func (c *Config) updatable(o *Config) bool {
	return c.AckPolicy == o.AckPolicy && c.DeliverPolicy == o.DeliverPolicy &&
		c.OptStartSeq == o.OptStartSeq && c.OptStartTime == o.OptStartTime
}

// clone returns a deep copy, so a State never shares slices with an entry.
func (c *Config) clone() Config {
	n := *c
	n.BackOff = slices.Clone(c.BackOff)
	n.FilterSubjects = slices.Clone(c.FilterSubjects)
	n.Raw = bytes.Clone(c.Raw)
	return n
}
