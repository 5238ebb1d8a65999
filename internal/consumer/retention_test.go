package consumer

import (
	"slices"
	"testing"
)

func TestRemovableInterest(t *testing.T) {
	src := &memSource{}
	for i := range 6 {
		src.add([]string{"a.x", "b.x"}[i%2], 1) // 1,3,5 on a.x; 2,4,6 on b.x
	}
	mk := func(filter ...string) *State {
		s := &State{}
		var out Outcome
		s.Apply(&Entry{Op: OpCreate, Gen: 1, Config: &Config{AckPolicy: AckExplicit, FilterSubjects: filter}}, src, &out)
		return s
	}
	all, onlyA := mk(), mk("a.*")
	cs := []*State{all, onlyA}
	apply := func(s *State, e Entry) Outcome {
		var out Outcome
		s.Apply(&e, src, &out)
		return out
	}
	apply(all, Entry{Op: OpDeliver, Gen: 1, Seqs: []uint64{1, 2, 3}})
	apply(onlyA, Entry{Op: OpDeliver, Gen: 1, Seqs: []uint64{1, 3}})

	out := apply(all, Entry{Op: OpAck, Seq: 1})
	if got := AppendRemovable(nil, InterestRetention, out.Acked, src.subject, cs); len(got) != 0 {
		t.Fatalf("removed %v while onlyA still holds 1", got)
	}
	out = apply(onlyA, Entry{Op: OpAck, Seq: 1})
	if got := AppendRemovable(nil, InterestRetention, out.Acked, src.subject, cs); !slices.Equal(got, []uint64{1}) {
		t.Fatalf("removable %v, want [1]", got)
	}
	// b.x is only all's: its ack alone removes 2.
	out = apply(all, Entry{Op: OpAck, Seq: 2})
	if got := AppendRemovable(nil, InterestRetention, out.Acked, src.subject, cs); !slices.Equal(got, []uint64{2}) {
		t.Fatalf("removable %v, want [2]", got)
	}
	// Not delivered yet: interest stays.
	if Removable(InterestRetention, 5, "a.x", cs) || Removable(InterestRetention, 4, "b.x", cs) {
		t.Fatal("undelivered message removable")
	}
	// No consumer matches: interest drops it, a work queue keeps it.
	if only := []*State{onlyA}; !Removable(InterestRetention, 9, "c.x", only) || Removable(WorkQueueRetention, 9, "c.x", only) {
		t.Fatal("unmatched message")
	}
	if Removable(LimitsRetention, 1, "a.x", cs) {
		t.Fatal("limits retention removed by consumers")
	}
	// Deleting the consumer that held 3 makes it removable once all acked it.
	apply(all, Entry{Op: OpAck, Seq: 3})
	if Removable(InterestRetention, 3, "a.x", cs) {
		t.Fatal("3 removable while onlyA holds it")
	}
	apply(onlyA, Entry{Op: OpDelete})
	if !Removable(InterestRetention, 3, "a.x", cs) {
		t.Fatal("3 kept after the consumer holding it was deleted")
	}
}

func TestRemovableWorkQueue(t *testing.T) {
	src := &memSource{}
	for range 4 {
		src.add("jobs", 1)
	}
	w := &State{}
	var out Outcome
	w.Apply(&Entry{Op: OpCreate, Gen: 1, Config: &Config{AckPolicy: AckExplicit, AckWait: 1, MaxDeliver: 1}}, src, &out)
	cs := []*State{w}
	w.Apply(&Entry{Op: OpDeliver, Gen: 1, Seqs: []uint64{1, 2}}, src, &out)
	w.Apply(&Entry{Op: OpAck, Seq: 2}, src, &out)
	if got := AppendRemovable(nil, WorkQueueRetention, out.Acked, src.subject, cs); !slices.Equal(got, []uint64{2}) {
		t.Fatalf("removable %v", got)
	}
	// 1 reaches max_deliver unacknowledged: kept (as nats-server) until acked or gone.
	w.Apply(&Entry{Op: OpRedeliverDue, TS: 10}, src, &out)
	if len(out.Events) != 1 || Removable(WorkQueueRetention, 1, "jobs", cs) {
		t.Fatalf("max-delivered: %+v", out)
	}
	w.Apply(&Entry{Op: OpTerm, Seq: 1}, src, &out)
	if !Removable(WorkQueueRetention, 1, "jobs", cs) {
		t.Fatal("terminated message kept")
	}
}

// A message past max_deliver keeps interest below the ack floor, so the
// scan after a consumer's delete starts below it (InterestFloor).
func TestInterestFloorBelowMaxed(t *testing.T) {
	src := &memSource{}
	for range 3 {
		src.add("x", 1)
	}
	s := &State{}
	var out Outcome
	s.Apply(&Entry{Op: OpCreate, Gen: 1, Config: &Config{AckPolicy: AckExplicit, AckWait: 1, MaxDeliver: 1}}, src, &out)
	s.Apply(&Entry{Op: OpDeliver, Gen: 1, Seqs: []uint64{1, 2, 3}}, src, &out)
	s.Apply(&Entry{Op: OpAck, Seq: 1}, src, &out)
	s.Apply(&Entry{Op: OpRedeliverDue, TS: 10}, src, &out)
	if f, i := s.AckFloor().Stream, s.InterestFloor(); f != 3 || i != 1 {
		t.Fatalf("ack floor %d interest floor %d, want 3 and 1", f, i)
	}
	s.Apply(&Entry{Op: OpAck, Seq: 2}, src, &out)
	if i := s.InterestFloor(); i != 2 {
		t.Fatalf("interest floor %d after acking 2, want 2", i)
	}
}

// Above NeedsAllAbove every matching message is needed (NeedsAck).
func TestNeedsAllAbove(t *testing.T) {
	src := &memSource{}
	for range 6 {
		src.add("x", 1)
	}
	for _, ap := range []AckPolicy{AckExplicit, AckAll, AckNone} {
		s := &State{}
		var out Outcome
		s.Apply(&Entry{Op: OpCreate, Gen: 1, Config: &Config{AckPolicy: ap, AckWait: 100, MaxAckPending: 100}}, src, &out)
		s.Apply(&Entry{Op: OpDeliver, Gen: 1, Seqs: []uint64{1, 2, 3, 4}}, src, &out)
		s.Apply(&Entry{Op: OpAck, Seq: 2}, src, &out)
		for seq := s.NeedsAllAbove() + 1; seq <= 6; seq++ {
			if !s.NeedsAck(seq, "x") {
				t.Fatalf("ack policy %d: %d above %d not needed", ap, seq, s.NeedsAllAbove())
			}
		}
	}
}
