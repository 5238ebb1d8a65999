package consumer

import (
	"slices"
	"testing"
)

func TestNextDeadlineAndPendingQueries(t *testing.T) {
	f := newFixture(t, 6, explicit())
	if _, ok := f.s.NextDeadline(nil); ok {
		t.Fatal("a deadline with nothing pending")
	}
	f.deliver(5*sec, 1, 2)
	f.deliver(7*sec, 3, 4)
	if d, ok := f.s.NextDeadline(nil); !ok || d != 15*sec {
		t.Fatalf("next deadline %d %v, want 15s", d, ok)
	}
	skip12 := func(seq uint64) bool { return seq <= 2 }
	if d, ok := f.s.NextDeadline(skip12); !ok || d != 17*sec {
		t.Fatalf("next deadline skipping 1, 2: %d %v, want 17s", d, ok)
	}
	f.apply(Entry{Op: OpAck, TS: 8 * sec, Seq: 2, CSeq: 2})
	if got := f.s.PendingBelow(4); !slices.Equal(got, []uint64{1, 3}) {
		t.Fatalf("pending below 4: %v", got)
	}
	if got := f.s.PendingBelow(1); got != nil {
		t.Fatalf("pending below 1: %v", got)
	}
	if got := f.s.PendingMissing(func(seq uint64) bool { return seq%2 == 0 }); !slices.Equal(got, []uint64{4}) {
		t.Fatalf("pending missing (even): %v", got)
	}
}
