package consumer

import (
	"errors"
	"slices"
	"testing"
)

const sec = int64(1_000_000_000)

// fixture: a stream of n messages on "a.<i%2>" and a consumer on it.
type fixture struct {
	t   *testing.T
	src *memSource
	s   *State
	gen uint64
}

func newFixture(t *testing.T, n int, cfg Config) *fixture {
	f := &fixture{t: t, src: &memSource{}, s: &State{}}
	for i := range n {
		f.src.add([]string{"a.0", "a.1"}[i%2], int64(i+1)*sec)
	}
	f.gen = 1
	out := f.apply(Entry{Op: OpCreate, TS: 1, Gen: f.gen, Config: &cfg})
	if out.Err != nil {
		t.Fatalf("create: %v", out.Err)
	}
	return f
}

func (f *fixture) apply(e Entry) Outcome {
	f.t.Helper()
	var out Outcome
	f.s.Apply(&e, f.src, &out)
	if got := ackFloorOf(f.s); got != f.s.floor {
		f.t.Fatalf("%v: floor cache %+v, by definition %+v", e.Op, f.s.floor, got)
	}
	return out
}

func (f *fixture) deliver(ts int64, seqs ...uint64) Outcome {
	f.t.Helper()
	return f.apply(Entry{Op: OpDeliver, TS: ts, Gen: f.s.gen, Seqs: seqs})
}

func sseqs(ds []Delivery) []uint64 {
	var r []uint64
	for _, d := range ds {
		r = append(r, d.SSeq)
	}
	return r
}

func explicit() Config { return Config{AckPolicy: AckExplicit, AckWait: 10 * sec} }

func TestCreateStartSequences(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want uint64 // Delivered.Stream after create
	}{
		{"all", Config{DeliverPolicy: DeliverAll}, 0},
		{"new", Config{DeliverPolicy: DeliverNew}, 10},
		{"last", Config{DeliverPolicy: DeliverLast}, 9},
		{"last filtered", Config{DeliverPolicy: DeliverLast, FilterSubjects: []string{"a.0"}}, 8},
		{"start seq", Config{DeliverPolicy: DeliverByStartSequence, OptStartSeq: 4}, 3},
		{"start seq past end", Config{DeliverPolicy: DeliverByStartSequence, OptStartSeq: 40}, 39},
		{"start time", Config{DeliverPolicy: DeliverByStartTime, OptStartTime: 5 * sec}, 4},
		{"start time past end", Config{DeliverPolicy: DeliverByStartTime, OptStartTime: 50 * sec}, 10},
	}
	for _, c := range cases {
		f := newFixture(t, 10, c.cfg)
		if d := f.s.Delivered(); d.Stream != c.want || d.Consumer != 0 || f.s.AckFloor() != d {
			t.Errorf("%s: delivered %+v floor %+v, want stream %d", c.name, d, f.s.AckFloor(), c.want)
		}
	}
	// Purged stream: deliver all starts at the first stored message.
	f := &fixture{t: t, src: &memSource{}, s: &State{}}
	for range 5 {
		f.src.add("a", 1)
	}
	f.src.remove(1, 2)
	f.apply(Entry{Op: OpCreate, Gen: 1, Config: &Config{}})
	if f.s.Delivered().Stream != 2 {
		t.Fatalf("delivered %+v, want stream 2", f.s.Delivered())
	}
}

func TestCreateUpdateDelete(t *testing.T) {
	f := newFixture(t, 3, explicit())
	cfg := explicit()
	if out := f.apply(Entry{Op: OpCreate, Gen: 2, Config: &cfg}); out.Err != nil || out.Changed {
		t.Fatalf("same create: %+v", out)
	}
	cfg.MaxDeliver = 3
	if out := f.apply(Entry{Op: OpCreate, Gen: 2, Config: &cfg}); !errors.Is(out.Err, ErrExists) {
		t.Fatalf("other create: %+v", out)
	}
	f.deliver(2, 1)
	oldGen := f.s.Gen()
	if out := f.apply(Entry{Op: OpUpdate, Gen: 3, Config: &cfg}); out.Err != nil || !out.Changed || !out.Interest {
		t.Fatalf("update: %+v", out)
	}
	if out := f.apply(Entry{Op: OpDeliver, Gen: oldGen, TS: 3, Seqs: []uint64{2}}); !errors.Is(out.Err, ErrStaleDelivery) {
		t.Fatalf("delivery for the old config: %+v", out)
	}
	bad := cfg
	bad.AckPolicy = AckAll
	if out := f.apply(Entry{Op: OpUpdate, Gen: 4, Config: &bad}); !errors.Is(out.Err, ErrNotUpdatable) {
		t.Fatalf("ack policy update: %+v", out)
	}
	if out := f.apply(Entry{Op: OpDelete}); !out.Changed || out.Events[0].Kind != EventDeleted {
		t.Fatalf("delete: %+v", out)
	}
	for _, op := range []Op{OpAck, OpDeliver, OpUpdate, OpPin, OpDelete} {
		if out := f.apply(Entry{Op: op, Seq: 1, Gen: 9, Config: &cfg}); !errors.Is(out.Err, ErrNoConsumer) {
			t.Fatalf("%v after delete: %+v", op, out)
		}
	}
	// A consumer made again under the same name refuses the old incarnation's deliveries.
	f.apply(Entry{Op: OpCreate, Gen: 5, Config: &cfg})
	if out := f.apply(Entry{Op: OpDeliver, Gen: 3, Seqs: []uint64{1}}); !errors.Is(out.Err, ErrStaleDelivery) {
		t.Fatalf("old incarnation's delivery: %+v", out)
	}
}

func TestDeliver(t *testing.T) {
	cfg := explicit()
	cfg.MaxAckPending = 3
	f := newFixture(t, 10, cfg)
	f.src.remove(4)
	out := f.deliver(5*sec, 1, 2, 4, 3, 5, 6)
	// 4 is gone, 3 is out of order once 4 is passed? no: 4 skipped, 3 > 2 goes, 5 exceeds max_ack_pending.
	if got := sseqs(out.Deliveries); !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Fatalf("delivered %v", got)
	}
	for i, d := range out.Deliveries {
		if d.CSeq != uint64(i+1) || d.Deliveries != 1 {
			t.Fatalf("delivery %d: %+v", i, d)
		}
	}
	// num_pending after the entry: 5..10 without 4 = 6; each delivery counts the ones after it.
	if p := []uint64{out.Deliveries[0].Pending, out.Deliveries[1].Pending, out.Deliveries[2].Pending}; !slices.Equal(p, []uint64{8, 7, 6}) {
		t.Fatalf("pending %v", p)
	}
	if f.s.NumAckPending() != 3 || f.s.Delivered() != (SeqPair{3, 3}) || f.s.AckFloor() != (SeqPair{0, 0}) {
		t.Fatalf("state: pending %d delivered %+v floor %+v", f.s.NumAckPending(), f.s.Delivered(), f.s.AckFloor())
	}
	// A redelivery before its ack wait is refused; after it, it gets a new consumer sequence.
	if out := f.deliver(6*sec, 1); len(out.Deliveries) != 0 || out.Changed {
		t.Fatalf("early redelivery: %+v", out)
	}
	out = f.deliver(15*sec, 1)
	if len(out.Deliveries) != 1 || out.Deliveries[0] != (Delivery{SSeq: 1, CSeq: 4, Deliveries: 2, Pending: 6}) {
		t.Fatalf("redelivery: %+v", out.Deliveries)
	}
	if p, _ := f.s.PendingOf(1); p.CSeq != 1 || p.Deliveries != 2 || p.TS != 15*sec {
		t.Fatalf("pending record %+v", p)
	}
	if f.s.NumRedelivered() != 1 {
		t.Fatalf("num_redelivered %d", f.s.NumRedelivered())
	}
	// Paused: refused whole.
	f.apply(Entry{Op: OpPause, TS: 16 * sec, Until: 20 * sec})
	if out := f.deliver(17*sec, 5); !errors.Is(out.Err, ErrPaused) {
		t.Fatalf("paused delivery: %+v", out)
	}
}

func TestDeliverAckNone(t *testing.T) {
	f := newFixture(t, 5, Config{AckPolicy: AckNone})
	out := f.deliver(1, 1, 2, 3)
	if !slices.Equal(out.Acked, []uint64{1, 2, 3}) || f.s.NumAckPending() != 0 || f.s.AckFloor() != (SeqPair{3, 3}) {
		t.Fatalf("ack none: %+v floor %+v", out, f.s.AckFloor())
	}
	if out := f.apply(Entry{Op: OpAck, Seq: 2}); out.Reply || out.Changed {
		t.Fatalf("ack to AckNone: %+v", out)
	}
}

func TestAckExplicit(t *testing.T) {
	f := newFixture(t, 10, explicit())
	f.deliver(1, 1, 2, 3, 4)
	if out := f.apply(Entry{Op: OpAck, TS: 2, Seq: 2, CSeq: 2}); !out.Reply || !slices.Equal(out.Acked, []uint64{2}) {
		t.Fatalf("ack 2: %+v", out)
	}
	if f.s.AckFloor() != (SeqPair{0, 0}) {
		t.Fatalf("floor moved past unacked 1: %+v", f.s.AckFloor())
	}
	f.apply(Entry{Op: OpAck, TS: 3, Seq: 1, CSeq: 1})
	if f.s.AckFloor() != (SeqPair{2, 2}) {
		t.Fatalf("floor %+v, want 2/2", f.s.AckFloor())
	}
	// Acked twice: answered, nothing changes.
	if out := f.apply(Entry{Op: OpAck, TS: 4, Seq: 1}); !out.Reply || out.Changed || len(out.Acked) != 0 {
		t.Fatalf("second ack: %+v", out)
	}
	// Not delivered yet: nats-server does not answer.
	if out := f.apply(Entry{Op: OpAck, TS: 4, Seq: 7}); out.Reply || out.Changed {
		t.Fatalf("ack beyond delivered: %+v", out)
	}
	f.apply(Entry{Op: OpAck, Seq: 4})
	f.apply(Entry{Op: OpAck, Seq: 3})
	if f.s.AckFloor() != (SeqPair{4, 4}) || f.s.NumAckPending() != 0 {
		t.Fatalf("all acked: floor %+v", f.s.AckFloor())
	}
	// An acknowledged message is never redelivered.
	if out := f.deliver(100*sec, 1, 2, 3, 4); len(out.Deliveries) != 0 {
		t.Fatalf("acked messages redelivered: %+v", out.Deliveries)
	}
}

func TestAckAll(t *testing.T) {
	f := newFixture(t, 10, Config{AckPolicy: AckAll, AckWait: sec})
	f.deliver(1, 1, 2, 3, 4, 5)
	out := f.apply(Entry{Op: OpAck, TS: 2, Seq: 3, CSeq: 3})
	if !slices.Equal(out.Acked, []uint64{1, 2, 3}) || f.s.AckFloor() != (SeqPair{3, 3}) || !out.Reply {
		t.Fatalf("ack all 3: %+v floor %+v", out, f.s.AckFloor())
	}
	if out := f.apply(Entry{Op: OpAckAll, Seq: 2}); !out.Reply || out.Changed {
		t.Fatalf("ack below floor: %+v", out)
	}
	// The walk over the pending map (gap larger than pending).
	f.deliver(3, 6, 7, 8, 9, 10)
	f.apply(Entry{Op: OpAck, Seq: 4})
	out = f.apply(Entry{Op: OpAck, Seq: 9})
	if !slices.Equal(out.Acked, []uint64{5, 6, 7, 8, 9}) || f.s.AckFloor() != (SeqPair{9, 9}) {
		t.Fatalf("ack all 9: %+v floor %+v", out.Acked, f.s.AckFloor())
	}
}

func TestNakTermProgress(t *testing.T) {
	f := newFixture(t, 10, explicit())
	f.deliver(100*sec, 1, 2, 3)
	// nak without delay: due at once.
	out := f.apply(Entry{Op: OpNak, TS: 101 * sec, Seq: 1, CSeq: 1})
	if !slices.Equal(out.Due, []uint64{1}) || out.Events[0].Kind != EventNak || !out.Reply {
		t.Fatalf("nak: %+v", out)
	}
	if d := f.deliver(101*sec, 1); len(d.Deliveries) != 1 {
		t.Fatalf("naked message not redelivered: %+v", d)
	}
	// nak with delay 5s: not before 106s.
	f.apply(Entry{Op: OpNak, TS: 101 * sec, Seq: 2, CSeq: 2, Delay: 5 * sec})
	if d := f.deliver(105*sec, 2); len(d.Deliveries) != 0 {
		t.Fatal("nak delay not honoured")
	}
	if d := f.deliver(106*sec, 2); len(d.Deliveries) != 1 {
		t.Fatal("nak delay past, not redelivered")
	}
	// nak of a consumer sequence out of range: ignored, still answered.
	if out := f.apply(Entry{Op: OpNak, TS: 107 * sec, Seq: 3, CSeq: 99}); out.Changed || !out.Reply {
		t.Fatalf("nak out of range: %+v", out)
	}
	// progress restarts the wait.
	f.apply(Entry{Op: OpProgress, TS: 108 * sec, Seq: 3})
	if d := f.deliver(112*sec, 3); len(d.Deliveries) != 0 {
		t.Fatal("redelivered despite +WPI")
	}
	if d := f.deliver(118*sec, 3); len(d.Deliveries) != 1 {
		t.Fatal("not redelivered after the restarted wait")
	}
	// term: acknowledged, advisory with the reason.
	out = f.apply(Entry{Op: OpTerm, TS: 119 * sec, Seq: 3, CSeq: 6, Text: "bad"})
	if !slices.Equal(out.Acked, []uint64{3}) || len(out.Events) != 1 || out.Events[0] != (Event{Kind: EventTerminated, SSeq: 3, CSeq: 6, Deliveries: 2, Text: "bad"}) {
		t.Fatalf("term: %+v", out)
	}
	if out := f.apply(Entry{Op: OpTerm, TS: 119 * sec, Seq: 3, Text: "again"}); len(out.Events) != 0 || out.Changed {
		t.Fatalf("second term: %+v", out)
	}
}

func TestBackoffAndMaxDeliver(t *testing.T) {
	cfg := Config{AckPolicy: AckExplicit, AckWait: 100 * sec, BackOff: []int64{sec, 2 * sec, 4 * sec}, MaxDeliver: 3}
	f := newFixture(t, 3, cfg)
	f.deliver(0, 1, 2)
	want := []int64{1 * sec, 3 * sec} // 1s after the first delivery, 2s after the second
	ts := int64(0)
	for i, w := range want {
		if d := f.deliver(w-1, 1); len(d.Deliveries) != 0 {
			t.Fatalf("redelivery %d early at %d", i, w-1)
		}
		if d := f.deliver(w, 1); len(d.Deliveries) != 1 {
			t.Fatalf("redelivery %d missing at %d", i, w)
		}
		ts = w
	}
	// Third delivery was the last: due again after 4s, the timer retires it.
	if out := f.apply(Entry{Op: OpRedeliverDue, TS: ts + 3*sec}); len(out.Events) != 0 || len(out.Due) != 1 || out.Due[0] != 2 {
		t.Fatalf("early retire: %+v", out)
	}
	if d := f.deliver(ts+4*sec, 1); len(d.Deliveries) != 0 {
		t.Fatal("delivered beyond max_deliver")
	}
	out := f.apply(Entry{Op: OpRedeliverDue, TS: ts + 4*sec, Seqs: []uint64{1}})
	if len(out.Events) != 1 || out.Events[0] != (Event{Kind: EventMaxDeliveries, SSeq: 1, CSeq: 1, Deliveries: 3}) {
		t.Fatalf("retire: %+v", out)
	}
	if _, ok := f.s.PendingOf(1); ok || f.s.AckFloor().Stream != 1 || f.s.NumRedelivered() != 1 {
		t.Fatalf("after retire: floor %+v redelivered %d", f.s.AckFloor(), f.s.NumRedelivered())
	}
	// Interest is kept until acked or gone, as nats-server.
	if !f.s.NeedsAck(1, "a.0") {
		t.Fatal("max-delivered message lost interest")
	}
	if out := f.apply(Entry{Op: OpAck, Seq: 1}); !slices.Equal(out.Acked, []uint64{1}) || f.s.NeedsAck(1, "a.0") {
		t.Fatalf("late ack of a max-delivered message: %+v", out)
	}
}

func TestPauseAndPin(t *testing.T) {
	f := newFixture(t, 1, explicit())
	if out := f.apply(Entry{Op: OpPause, TS: 10, Until: 20}); out.Events[0] != (Event{Kind: EventPaused, Until: 20}) {
		t.Fatalf("pause: %+v", out)
	}
	if out := f.apply(Entry{Op: OpResume, TS: 15, Until: 20}); out.Changed {
		t.Fatal("timer resume before the pause ended")
	}
	if out := f.apply(Entry{Op: OpResume, TS: 25, Until: 19}); out.Changed {
		t.Fatal("resume of another pause")
	}
	if out := f.apply(Entry{Op: OpResume, TS: 25, Until: 20}); out.Events[0].Kind != EventResumed || f.s.PausedUntil() != 0 {
		t.Fatalf("resume: %+v", out)
	}
	f.apply(Entry{Op: OpPause, TS: 30, Until: 40})
	if f.apply(Entry{Op: OpResume, TS: 31}); f.s.PausedUntil() != 0 {
		t.Fatal("API resume")
	}
	if out := f.apply(Entry{Op: OpPin, TS: 5, Text: "A"}); out.Events[0] != (Event{Kind: EventPinned, Text: "A"}) {
		t.Fatalf("pin: %+v", out)
	}
	if out := f.apply(Entry{Op: OpPin, Text: "B"}); !errors.Is(out.Err, ErrPinned) {
		t.Fatalf("second pin: %+v", out)
	}
	if out := f.apply(Entry{Op: OpUnpin, Text: "B"}); out.Changed {
		t.Fatal("unpin of another id")
	}
	if out := f.apply(Entry{Op: OpUnpin}); out.Events[0] != (Event{Kind: EventUnpinned, Text: "A"}) {
		t.Fatalf("unpin: %+v", out)
	}
}

func TestStreamRemovedAndPurged(t *testing.T) {
	f := newFixture(t, 10, explicit())
	f.deliver(1, 1, 2, 3, 4)
	f.src.remove(1, 3)
	out := f.apply(Entry{Op: OpStreamRemoved, Seqs: []uint64{1, 3}, Text: "Unacknowledged message was deleted"})
	if len(out.Events) != 2 || out.Events[0].Kind != EventTerminated || f.s.AckFloor() != (SeqPair{1, 1}) {
		t.Fatalf("removed: %+v floor %+v", out, f.s.AckFloor())
	}
	f.src.remove(1, 2, 3, 4, 5, 6, 7)
	f.apply(Entry{Op: OpStreamPurged, Seq: 8})
	if f.s.NumAckPending() != 0 || f.s.Delivered() != (SeqPair{4, 7}) || f.s.AckFloor() != (SeqPair{4, 7}) {
		t.Fatalf("purged: delivered %+v floor %+v", f.s.Delivered(), f.s.AckFloor())
	}
	if n := f.s.NumPending(f.src); n != 3 {
		t.Fatalf("num_pending %d, want 3", n)
	}
}

func TestBadEntries(t *testing.T) {
	f := newFixture(t, 1, explicit())
	for _, e := range []Entry{{Op: 0}, {Op: opMax}, {Op: OpCreate}, {Op: OpUpdate, Gen: 9}, {Op: OpPin}} {
		d := f.s.Digest()
		if out := f.apply(e); !errors.Is(out.Err, ErrBadEntry) || f.s.Digest() != d {
			t.Fatalf("%+v: %+v", e, out)
		}
	}
}

// TestAcksIsSingleAcks: a batch of acks leaves the state and the outcome
// one OpAck entry per message (same stamp) would, in any order, with
// messages not pending, not delivered yet or repeated, under each ack
// policy; and it is never answered.
func TestAcksIsSingleAcks(t *testing.T) {
	batches := [][]uint64{
		{1, 2, 3},
		{3, 1, 2},
		{2, 2, 9, 5, 12, 1},
		{4},
		{},
	}
	for _, policy := range []AckPolicy{AckExplicit, AckAll, AckNone, AckFlowControl} {
		for _, seqs := range batches {
			one := newFixture(t, 12, Config{AckPolicy: policy, AckWait: 10 * sec, MaxDeliver: 1})
			batch := newFixture(t, 12, Config{AckPolicy: policy, AckWait: 10 * sec, MaxDeliver: 1})
			for _, f := range []*fixture{one, batch} {
				f.deliver(2*sec, 1, 2, 3, 4, 5, 6, 7, 8, 9)
				f.apply(Entry{Op: OpRedeliverDue, TS: 30 * sec}) // past max_deliver: 1..9 kept as maxed
				f.deliver(31*sec, 10, 11)
			}
			var acked []uint64
			for _, seq := range seqs {
				out := one.apply(Entry{Op: OpAck, TS: 40 * sec, Seq: seq})
				acked = append(acked, out.Acked...)
			}
			slices.Sort(acked)
			out := batch.apply(Entry{Op: OpAcks, TS: 40 * sec, Seqs: seqs})
			if out.Reply || out.Err != nil {
				t.Fatalf("%v %v: reply %v err %v", policy, seqs, out.Reply, out.Err)
			}
			if !slices.Equal(out.Acked, acked) && len(out.Acked)+len(acked) > 0 {
				t.Fatalf("%v %v: acked %v, single acks %v", policy, seqs, out.Acked, acked)
			}
			if one.s.Digest() != batch.s.Digest() || one.s.AckFloor() != batch.s.AckFloor() {
				t.Fatalf("%v %v: batch floor %+v, single acks %+v", policy, seqs, batch.s.AckFloor(), one.s.AckFloor())
			}
		}
	}
}

// Ack policy flow_control acks as policy all (an ack acknowledges
// everything up to it) and never redelivers: no deadline, and a
// RedeliverDue however late delivers nothing again.
func TestAckFlowControl(t *testing.T) {
	f := newFixture(t, 6, Config{AckPolicy: AckFlowControl, MaxAckPending: 4})
	f.deliver(1*sec, 1, 2, 3, 4)
	if _, ok := f.s.NextDeadline(nil); ok {
		t.Fatal("a flow_control consumer has a redelivery deadline")
	}
	if out := f.apply(Entry{Op: OpRedeliverDue, TS: 1000 * sec}); len(out.Due) != 0 {
		t.Fatalf("redelivery of a flow_control consumer: %+v", out)
	}
	if out := f.deliver(1000*sec, 1, 2); len(out.Deliveries) != 0 {
		t.Fatalf("redelivered: %+v", out.Deliveries)
	}
	if out := f.apply(Entry{Op: OpAckAll, TS: 2 * sec, Seq: 3, CSeq: 3}); !slices.Equal(out.Acked, []uint64{1, 2, 3}) {
		t.Fatalf("ack up to 3: %+v", out)
	}
	if out := f.apply(Entry{Op: OpAck, TS: 3 * sec, Seq: 4, CSeq: 4}); !slices.Equal(out.Acked, []uint64{4}) || f.s.AckFloor() != (SeqPair{4, 4}) {
		t.Fatalf("ack 4: %+v floor %+v", out, f.s.AckFloor())
	}
	b := AppendEntry(nil, &Entry{Op: OpCreate, Consumer: "c", Config: &Config{AckPolicy: AckFlowControl}})
	if e, err := DecodeEntry(b); err != nil || e.Config.AckPolicy != AckFlowControl {
		t.Fatalf("entry round trip: %+v %v", e, err)
	}
}
