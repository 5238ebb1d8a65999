package consumer

import "errors"

// Errors an entry can be rejected with. A rejected entry changes nothing.
var (
	ErrNoConsumer    = errors.New("consumer not found")
	ErrExists        = errors.New("consumer already exists")
	ErrNotUpdatable  = errors.New("consumer ack policy and start position can not be updated")
	ErrStaleDelivery = errors.New("delivery made for an older consumer configuration")
	ErrPaused        = errors.New("consumer is paused")
	ErrPinned        = errors.New("priority group already has a pinned client")
	ErrBadEntry      = errors.New("malformed consumer entry")
)

// EventKind is an advisory the caller publishes after the apply.
type EventKind uint8

// Advisories ($JS.EVENT.ADVISORY.CONSUMER.*).
const (
	EventCreated       EventKind = iota + 1 // CREATED
	EventDeleted                            // DELETED
	EventMaxDeliveries                      // MAX_DELIVERIES
	EventTerminated                         // MSG_TERMINATED
	EventNak                                // MSG_NAKED
	EventPaused                             // PAUSE (paused true)
	EventResumed                            // PAUSE (paused false)
	EventPinned                             // PINNED
	EventUnpinned                           // UNPINNED
)

// Event is one advisory's content.
type Event struct {
	Kind       EventKind
	SSeq       uint64
	CSeq       uint64
	Deliveries uint64
	Until      int64  // EventPaused
	Text       string // EventTerminated reason, EventPinned/EventUnpinned id
}

// Delivery is one message the Deliver entry let through: the leader sends
// it (and only it) once the entry is applied, with the ack subject made of
// these numbers.
type Delivery struct {
	SSeq       uint64
	CSeq       uint64 // consumer sequence of this delivery (new for a redelivery)
	Deliveries uint64 // delivery count, 1 for a first delivery
	Pending    uint64 // num_pending for the ack subject
}

// Outcome is what the caller must do after an apply. It is the same on
// every replica; only the leader (or the server that proposed the entry)
// acts on Deliveries, Due and Reply, every replica acts on Acked.
type Outcome struct {
	Err        error      // the entry was rejected (nothing changed)
	Changed    bool       // the state changed
	Reply      bool       // an ack that asked for a reply is answered now
	Deliveries []Delivery // OpDeliver: what to send, in order
	Tag        uint64     // OpDeliver: the entry's Tag
	Due        []uint64   // messages to redeliver (leader's queue), ascending
	Acked      []uint64   // messages this consumer's interest left, ascending: retention candidates
	Interest   bool       // create/update/delete: the stream re-evaluates retention as a whole
	Events     []Event
}

// Reset empties o, keeping its slices' memory.
func (o *Outcome) Reset() {
	*o = Outcome{Deliveries: o.Deliveries[:0], Due: o.Due[:0], Acked: o.Acked[:0], Events: o.Events[:0]}
}

func (o *Outcome) event(e Event) { o.Events = append(o.Events, e) }
