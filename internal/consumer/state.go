package consumer

import "github.com/nats-io/nats-server/v2/internal/sublist"

// SeqPair is a consumer sequence and the stream sequence it stands for.
type SeqPair struct {
	Consumer uint64
	Stream   uint64
}

// Pending is one delivered, unacknowledged message.
type Pending struct {
	CSeq       uint64 // consumer sequence of its first delivery (kept on redelivery, as nats-server)
	Deliveries uint64 // how many times it was delivered, ≥ 1
	TS         int64  // last delivery, moved by nak delays and progress (leader's stamps)
}

// Source is what the state machine reads of its stream's store. The
// caller implements it over the stream's store at the moment of apply:
// every replica's store holds the same messages at the same log index, so
// everything read through it is the same on every replica.
type Source interface {
	// Bounds are the stream's first and last sequences (0, 0 when it never
	// held a message; first = last+1 when it is empty).
	Bounds() (first, last uint64)
	// Contains reports whether the message with sequence seq is stored.
	Contains(seq uint64) bool
	// NumPending counts stored messages with sequence ≥ from whose subject
	// matches one of filters (every message when filters is empty); with
	// lastPerSubject only the last message of each subject counts.
	NumPending(from uint64, filters []string, lastPerSubject bool) uint64
	// LastMatching is the sequence of the last message matching one of
	// filters (any message when empty), 0 when none does.
	LastMatching(filters []string) uint64
	// SeqAtTime is the first sequence stored at or after ts (unix ns),
	// last+1 when none is.
	SeqAtTime(ts int64) uint64
}

// State is the replicated state of one durable consumer. Its zero value
// is a consumer not created yet. Every change goes through Apply; the
// methods below only read.
type State struct {
	cfg       Config
	gen       uint64 // generation: log index of the last Create or Update (see Entry)
	created   int64
	deleted   bool
	delivered SeqPair  // last delivered (0 when none)
	floor     SeqPair  // ack floor: a cache, kept by floor.go
	order     []uint64 // pending stream seqs ascending, and some no longer pending (floor.go)
	pending   map[uint64]*Pending
	maxed     map[uint64]uint64 // stream seq → deliveries, of messages that reached max_deliver unacknowledged
	lastDeliv int64             // stamp of the last delivery (ConsumerInfo delivered.last_active)
	lastAck   int64             // stamp of the last ack that moved anything (ack_floor.last_active)
	paused    int64             // paused until (unix ns), 0 when not
	pinnedID  string
	pinnedTS  int64
}

// Exists reports whether the consumer was created and not deleted.
func (s *State) Exists() bool { return s.gen > 0 && !s.deleted }

// Config is the consumer's configuration (not to be modified).
func (s *State) Config() *Config { return &s.cfg }

// Created is the stamp of the Create entry.
func (s *State) Created() int64 { return s.created }

// Delivered is the last delivered pair (consumer seq counts redeliveries).
func (s *State) Delivered() SeqPair { return s.delivered }

// AckFloor is the highest pair at and below which nothing is pending.
func (s *State) AckFloor() SeqPair { return s.floor }

// NumAckPending is the number of delivered, unacknowledged messages.
func (s *State) NumAckPending() int { return len(s.pending) }

// PendingOf returns the pending record of stream sequence seq.
func (s *State) PendingOf(seq uint64) (Pending, bool) {
	if p, ok := s.pending[seq]; ok {
		return *p, true
	}
	return Pending{}, false
}

// NumRedelivered counts messages delivered more than once that are still
// tracked (pending, or past max_deliver and not yet gone), as nats-server
// counts its redelivery map; 0 when max_deliver is 1.
func (s *State) NumRedelivered() int {
	if s.cfg.MaxDeliver == 1 {
		return 0
	}
	n := 0
	for _, p := range s.pending {
		if p.Deliveries > 1 {
			n++
		}
	}
	for _, dc := range s.maxed {
		if dc > 1 {
			n++
		}
	}
	return n
}

// NumPending is the number of stream messages this consumer has still to
// deliver for the first time: a function of the store and Delivered.
func (s *State) NumPending(src Source) uint64 {
	if !s.Exists() {
		return 0
	}
	return src.NumPending(s.delivered.Stream+1, s.cfg.FilterSubjects, s.cfg.DeliverPolicy == DeliverLastPerSubject)
}

// PausedUntil is the pause deadline (unix ns), 0 when not paused. Whether
// it has passed is the reader's clock's business, not the state's.
func (s *State) PausedUntil() int64 { return s.paused }

// Pinned is the pinned client id of the priority group and when it was
// pinned ("" when none is).
func (s *State) Pinned() (id string, ts int64) { return s.pinnedID, s.pinnedTS }

// LastActive returns the stamps of the last delivery and of the last ack.
func (s *State) LastActive() (delivered, acked int64) { return s.lastDeliv, s.lastAck }

// Matches reports whether subj is one this consumer consumes.
func (s *State) Matches(subj string) bool {
	if len(s.cfg.FilterSubjects) == 0 {
		return true
	}
	for _, f := range s.cfg.FilterSubjects {
		if sublist.MatchLiteral(subj, f) {
			return true
		}
	}
	return false
}

// NeedsAck reports whether this consumer still holds interest in stream
// message seq with subject subj: the message matches its filter and is
// neither acknowledged nor below its ack floor. A message past max_deliver
// keeps interest until it is acknowledged or leaves the stream (as in
// nats-server).
func (s *State) NeedsAck(seq uint64, subj string) bool {
	if !s.Exists() || !s.Matches(subj) {
		return false
	}
	if _, ok := s.maxed[seq]; ok {
		return true
	}
	if seq <= s.floor.Stream {
		return false
	}
	if s.cfg.AckPolicy != AckExplicit || seq > s.delivered.Stream {
		return true
	}
	_, ok := s.pending[seq]
	return ok
}

// due reports whether pending p may be redelivered at stamp ts.
func (s *State) due(p *Pending, ts int64) bool {
	return s.cfg.AckPolicy != AckFlowControl && ts-p.TS >= s.cfg.wait(p.Deliveries)
}

// Deadline is when pending p becomes due for redelivery (unix ns).
func (s *State) Deadline(p Pending) int64 { return p.TS + s.cfg.wait(p.Deliveries) }

// Gen is the generation a Deliver entry must name (see Entry).
func (s *State) Gen() uint64 { return s.gen }

// InterestFloor is the highest stream sequence at and below which this
// consumer needs nothing: its ack floor, or one below the lowest message
// past max_deliver when that is lower (such messages keep interest until
// acknowledged, but the floor moves over them).
func (s *State) InterestFloor() uint64 {
	f := s.floor.Stream
	for seq := range s.maxed {
		if seq <= f {
			f = seq - 1
		}
	}
	return f
}

// NeedsAllAbove is a sequence above which this consumer needs every
// message its filter matches (NeedsAck is true for them): its delivered
// position under explicit acks, its ack floor otherwise.
func (s *State) NeedsAllAbove() uint64 {
	if s.cfg.AckPolicy == AckExplicit {
		return s.delivered.Stream
	}
	return s.floor.Stream
}
