package consumer

// Op says what an Entry does.
type Op uint8

// Entry operations. Create, Update, Delete, Deliver, Ack, AckAll, Nak,
// Term, Progress, RedeliverDue, Pause, Resume, Pin, Unpin and Acks are proposed
// by the leader into the stream's log. StreamRemoved and StreamPurged are
// never proposed: the stream's apply hands them to its consumers right
// after applying its own delete, expire, limit or purge entry (see doc.go).
const (
	OpCreate        Op = iota + 1 // Config: create the consumer
	OpUpdate                      // Config: replace its configuration
	OpDelete                      // delete it
	OpDeliver                     // Seqs (Gen, Tag): deliver or redeliver these stream messages
	OpAck                         // Seq, CSeq: acknowledge one message (+ACK, +NXT)
	OpAckAll                      // Seq, CSeq: acknowledge everything up to Seq (ack policy all)
	OpNak                         // Seq, CSeq, Delay: redeliver, after Delay when it is > 0
	OpTerm                        // Seq, CSeq, Text (reason): never redeliver, counts as acknowledged
	OpProgress                    // Seq: +WPI, the ack wait starts again
	OpRedeliverDue                // Seqs (empty: all pending): the leader's redelivery timer fired
	OpPause                       // Until: pause deliveries until then
	OpResume                      // Until: resume (0: unconditionally; else only that pause, once passed)
	OpPin                         // Text: pin this client id in the priority group
	OpUnpin                       // Text: unpin this id ("" any)
	OpStreamRemoved               // Seqs, Text (reason): messages gone from the stream
	OpStreamPurged                // Seq: everything below Seq gone from the stream
	OpAcks                        // Seqs: acknowledge each message in turn, as that many OpAck entries (no reply)
	opMax
)

// Entry is one change of a consumer's state. TS is the leader's stamp
// (unix ns), the only time the apply ever reads. Consumer names the
// consumer; the stream routes the entry by it.
type Entry struct {
	Op       Op
	TS       int64
	Consumer string
	Seq      uint64
	CSeq     uint64
	Seqs     []uint64
	Gen      uint64  // OpDeliver: the generation the leader delivered for; OpCreate, OpUpdate: see Generation
	Tag      uint64  // OpDeliver: the leader's own request id, handed back in the Outcome
	Delay    int64   // OpNak
	Until    int64   // OpPause, OpResume
	Text     string  // OpTerm reason, OpPin/OpUnpin id, OpStreamRemoved reason
	Config   *Config // OpCreate, OpUpdate; OpPause and the API's OpResume: set at apply (see State.pause)
}

var opNames = [...]string{"", "create", "update", "delete", "deliver", "ack", "ackall", "nak",
	"term", "progress", "redeliver-due", "pause", "resume", "pin", "unpin", "stream-removed", "stream-purged", "acks"}

func (o Op) String() string {
	if o > 0 && o < opMax {
		return opNames[o]
	}
	return "invalid"
}

// Generation: every Create and Update gives the consumer a new generation,
// and a Deliver entry is applied only for the generation the leader made it
// for, so deliveries chosen under an old configuration, or for an earlier
// consumer of the same name deleted since, are refused by construction.
// The stream's apply sets Gen of an OpCreate or OpUpdate entry to the
// entry's log index before calling Apply (unique and increasing on every
// replica); it is not part of what the leader proposes.
