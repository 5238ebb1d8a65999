package server

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	cstate "github.com/nats-io/nats-server/v2/internal/consumer"
	"github.com/nats-io/nuid"
)

// Consumer advisories and the ack metric, as nats-server sends them. The
// state machine lists what happened in Outcome.Events; applyLocked turns
// them into messages queued on the consumer's outq (in apply order, behind
// the deliveries decided before them), sent by flushOut after the stream's
// lock. Only the server running the consumer sends them, and nothing is
// encoded when nobody listens.

// Advisory subjects (each followed by .<stream>.<consumer>).
const (
	JSAdvisoryConsumerCreatedPre           = "$JS.EVENT.ADVISORY.CONSUMER.CREATED"
	JSAdvisoryConsumerDeletedPre           = "$JS.EVENT.ADVISORY.CONSUMER.DELETED"
	JSAdvisoryConsumerPausePre             = "$JS.EVENT.ADVISORY.CONSUMER.PAUSE"
	JSAdvisoryConsumerMaxDeliveryExceedPre = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES"
	JSAdvisoryConsumerMsgNakPre            = "$JS.EVENT.ADVISORY.CONSUMER.MSG_NAKED"
	JSAdvisoryConsumerMsgTerminatedPre     = "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED"
	JSMetricConsumerAckPre                 = "$JS.EVENT.METRIC.CONSUMER.ACK"
)

// Schema types of the advisories.
const (
	JSConsumerActionAdvisoryType             = "io.nats.jetstream.advisory.v1.consumer_action"
	JSConsumerPauseAdvisoryType              = "io.nats.jetstream.advisory.v1.consumer_pause"
	JSConsumerAckMetricType                  = "io.nats.jetstream.metric.v1.consumer_ack"
	JSConsumerDeliveryExceededAdvisoryType   = "io.nats.jetstream.advisory.v1.max_deliver"
	JSConsumerDeliveryNakAdvisoryType        = "io.nats.jetstream.advisory.v1.nak"
	JSConsumerDeliveryTerminatedAdvisoryType = "io.nats.jetstream.advisory.v1.terminated"
)

// TypedEvent heads every advisory.
type TypedEvent struct {
	Type string    `json:"type"`
	ID   string    `json:"id"`
	Time time.Time `json:"timestamp"`
}

// ActionAdvisoryType says what a consumer action advisory reports.
type ActionAdvisoryType string

// Consumer actions.
const (
	CreateEvent ActionAdvisoryType = "create"
	DeleteEvent ActionAdvisoryType = "delete"
	ModifyEvent ActionAdvisoryType = "modify"
)

// JSConsumerActionAdvisory: a consumer was created or deleted.
type JSConsumerActionAdvisory struct {
	TypedEvent
	Stream   string             `json:"stream"`
	Consumer string             `json:"consumer"`
	Action   ActionAdvisoryType `json:"action"`
	Domain   string             `json:"domain,omitempty"`
}

// JSConsumerPauseAdvisory: a consumer was paused or resumed.
type JSConsumerPauseAdvisory struct {
	TypedEvent
	Stream     string    `json:"stream"`
	Consumer   string    `json:"consumer"`
	Paused     bool      `json:"paused"`
	PauseUntil time.Time `json:"pause_until,omitempty"`
	Domain     string    `json:"domain,omitempty"`
}

// JSConsumerAckMetric is sampled from acks (sample_freq).
type JSConsumerAckMetric struct {
	TypedEvent
	Stream      string `json:"stream"`
	Consumer    string `json:"consumer"`
	ConsumerSeq uint64 `json:"consumer_seq"`
	StreamSeq   uint64 `json:"stream_seq"`
	Delay       int64  `json:"ack_time"`
	Deliveries  uint64 `json:"deliveries"`
	Domain      string `json:"domain,omitempty"`
}

// JSConsumerDeliveryExceededAdvisory: a message reached max_deliver.
type JSConsumerDeliveryExceededAdvisory struct {
	TypedEvent
	Stream     string `json:"stream"`
	Consumer   string `json:"consumer"`
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
	Domain     string `json:"domain,omitempty"`
}

// JSConsumerDeliveryNakAdvisory: a message was naked.
type JSConsumerDeliveryNakAdvisory struct {
	TypedEvent
	Stream      string `json:"stream"`
	Consumer    string `json:"consumer"`
	ConsumerSeq uint64 `json:"consumer_seq"`
	StreamSeq   uint64 `json:"stream_seq"`
	Deliveries  uint64 `json:"deliveries"`
	Domain      string `json:"domain,omitempty"`
}

// JSConsumerDeliveryTerminatedAdvisory: a message was terminated (+TERM,
// or removed from the stream while pending).
type JSConsumerDeliveryTerminatedAdvisory struct {
	TypedEvent
	Stream      string `json:"stream"`
	Consumer    string `json:"consumer"`
	ConsumerSeq uint64 `json:"consumer_seq"`
	StreamSeq   uint64 `json:"stream_seq"`
	Deliveries  uint64 `json:"deliveries"`
	Reason      string `json:"reason,omitempty"`
	Domain      string `json:"domain,omitempty"`
}

// typedEvent heads an advisory of schema typ, stamped now.
func (o *consumer) typedEvent(typ string) TypedEvent {
	return TypedEvent{Type: typ, ID: nuid.Next(), Time: o.now().UTC()}
}

// queueAdvisoryLocked queues e on subject pre.<stream>.<consumer> when
// someone listens.
func (o *consumer) queueAdvisoryLocked(pre string, e func() any) {
	subj := pre + "." + o.mset.name + "." + o.name
	if r := matchSubject(o.mset.jsa.acc, subj); len(r.Plain) == 0 && len(r.Queues) == 0 {
		return
	}
	b, err := json.Marshal(e())
	if err != nil {
		return
	}
	o.outq = append(o.outq, outMsg{to: subj, subj: subj, msg: b})
}

// eventsLocked queues the advisories of the outcome just applied.
func (o *consumer) eventsLocked(evs []cstate.Event) {
	dom := o.mset.jsa.js.srv.getOpts().JetStreamDomain
	stream, name := o.mset.name, o.name
	for _, ev := range evs {
		switch ev.Kind {
		case cstate.EventCreated, cstate.EventDeleted:
			pre, act := JSAdvisoryConsumerCreatedPre, CreateEvent
			if ev.Kind == cstate.EventDeleted {
				pre, act = JSAdvisoryConsumerDeletedPre, DeleteEvent
			}
			o.queueAdvisoryLocked(pre, func() any {
				return &JSConsumerActionAdvisory{TypedEvent: o.typedEvent(JSConsumerActionAdvisoryType),
					Stream: stream, Consumer: name, Action: act, Domain: dom}
			})
		case cstate.EventPaused, cstate.EventResumed:
			o.queueAdvisoryLocked(JSAdvisoryConsumerPausePre, func() any {
				e := &JSConsumerPauseAdvisory{TypedEvent: o.typedEvent(JSConsumerPauseAdvisoryType),
					Stream: stream, Consumer: name, Domain: dom}
				if ev.Kind == cstate.EventPaused {
					e.Paused, e.PauseUntil = true, time.Unix(0, ev.Until).UTC()
				} else if p := o.cfg.PauseUntil; p != nil { // the pause that ended
					e.PauseUntil = p.UTC()
				}
				return e
			})
		case cstate.EventMaxDeliveries:
			o.queueAdvisoryLocked(JSAdvisoryConsumerMaxDeliveryExceedPre, func() any {
				return &JSConsumerDeliveryExceededAdvisory{TypedEvent: o.typedEvent(JSConsumerDeliveryExceededAdvisoryType),
					Stream: stream, Consumer: name, StreamSeq: ev.SSeq, Deliveries: ev.Deliveries, Domain: dom}
			})
		case cstate.EventNak:
			o.queueAdvisoryLocked(JSAdvisoryConsumerMsgNakPre, func() any {
				return &JSConsumerDeliveryNakAdvisory{TypedEvent: o.typedEvent(JSConsumerDeliveryNakAdvisoryType),
					Stream: stream, Consumer: name, ConsumerSeq: ev.CSeq, StreamSeq: ev.SSeq, Deliveries: ev.Deliveries, Domain: dom}
			})
		case cstate.EventPinned, cstate.EventUnpinned:
			o.pinEventLocked(ev, dom)
		case cstate.EventTerminated:
			o.queueAdvisoryLocked(JSAdvisoryConsumerMsgTerminatedPre, func() any {
				return &JSConsumerDeliveryTerminatedAdvisory{TypedEvent: o.typedEvent(JSConsumerDeliveryTerminatedAdvisoryType),
					Stream: stream, Consumer: name, ConsumerSeq: ev.CSeq, StreamSeq: ev.SSeq, Deliveries: ev.Deliveries, Reason: ev.Text, Domain: dom}
			})
		}
	}
}

// sampleFreq is the percentage of acks sample_freq asks a metric for.
func sampleFreq(cfg *ConsumerConfig) int {
	n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(cfg.SampleFrequency), "%"))
	if err != nil {
		return 0
	}
	return n
}

// sampleAckLocked queues an ack metric for an explicit ack of a message
// (cseq: the acked delivery's consumer sequence) pending since p's last delivery, at the configured rate. The sampling is
// a leader-side choice about a notification, never about state.
func (o *consumer) sampleAckLocked(seq, cseq uint64, p cstate.Pending) {
	f := sampleFreq(o.cfg)
	if f <= 0 || (f < 100 && rand.IntN(100) > f) {
		return
	}
	dom := o.mset.jsa.js.srv.getOpts().JetStreamDomain
	o.queueAdvisoryLocked(JSMetricConsumerAckPre, func() any {
		now := o.now()
		return &JSConsumerAckMetric{TypedEvent: TypedEvent{Type: JSConsumerAckMetricType, ID: nuid.Next(), Time: now.UTC()},
			Stream: o.mset.name, Consumer: o.name, ConsumerSeq: cseq, StreamSeq: seq,
			Delay: now.UnixNano() - p.TS, Deliveries: p.Deliveries, Domain: dom}
	})
}
