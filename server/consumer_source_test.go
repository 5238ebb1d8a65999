package server

import (
	"testing"

	cstate "github.com/nats-io/nats-server/v2/internal/consumer"
	"github.com/nats-io/nats-server/v2/internal/store"
	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// sourceStores makes one empty store of each kind.
func sourceStores(t *testing.T) map[string]store.StreamStore {
	t.Helper()
	fs, err := store.OpenFileStore(vfs.NewMem(), "/s", store.FileStoreConfig{BlockSize: 256}, store.StoreLimits{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Stop() })
	return map[string]store.StreamStore{"memory": store.NewMemStore(store.StoreLimits{}), "file": fs}
}

func mustStoreMsg(t *testing.T, st store.StreamStore, subj string, ts int64) uint64 {
	t.Helper()
	seq, err := st.StoreMsg(subj, nil, []byte("x"), ts)
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

func checkBounds(t *testing.T, src cstate.Source, first, last uint64) {
	t.Helper()
	if f, l := src.Bounds(); f != first || l != last {
		t.Fatalf("bounds %d,%d want %d,%d", f, l, first, last)
	}
}

// TestConsumerSourceBounds checks the Bounds semantics internal/consumer
// expects: (0, 0) when the stream never held a message, first = last+1
// when it is empty, and SeqAtTime last+1 when nothing is at or after ts.
func TestConsumerSourceBounds(t *testing.T) {
	for name, st := range sourceStores(t) {
		t.Run(name, func(t *testing.T) {
			src := newStoreSource(st)
			checkBounds(t, src, 0, 0)
			if seq := src.SeqAtTime(0); seq != 1 {
				t.Fatalf("SeqAtTime on a stream that never held a message = %d, want 1", seq)
			}
			if n, last := src.NumPending(1, nil, false), src.LastMatching(nil); n != 0 || last != 0 {
				t.Fatalf("empty: pending %d last %d", n, last)
			}
			for i := int64(1); i <= 6; i++ {
				mustStoreMsg(t, st, []string{"o.a", "o.b", "p"}[(i-1)%3], i*10)
			}
			checkBounds(t, src, 1, 6)
			if _, err := st.RemoveMsg(1); err != nil {
				t.Fatal(err)
			}
			if _, err := st.RemoveMsg(4); err != nil {
				t.Fatal(err)
			}
			checkBounds(t, src, 2, 6)
			if src.Contains(4) || !src.Contains(5) || src.Contains(7) {
				t.Fatal("Contains")
			}
			// Left: 2 o.b (20), 3 p (30), 5 o.b (50), 6 p (60).
			for _, c := range []struct {
				from    uint64
				filters []string
				lastPer bool
				want    uint64
			}{
				{0, nil, false, 4}, {4, nil, false, 2}, {1, []string{"o.*"}, false, 2},
				{1, []string{"o.>", "p"}, true, 2}, {6, []string{"p"}, true, 1}, {7, nil, false, 0},
			} {
				if got := src.NumPending(c.from, c.filters, c.lastPer); got != c.want {
					t.Fatalf("NumPending(%d, %q, %v) = %d, want %d", c.from, c.filters, c.lastPer, got, c.want)
				}
			}
			if got := src.LastMatching([]string{"o.*"}); got != 5 {
				t.Fatalf("LastMatching(o.*) = %d", got)
			}
			if got := src.SeqAtTime(31); got != 5 {
				t.Fatalf("SeqAtTime(31) = %d, want 5 (4 is gone)", got)
			}
			if got := src.SeqAtTime(61); got != 7 {
				t.Fatalf("SeqAtTime after the last = %d, want 7", got)
			}
			if _, err := st.Purge(); err != nil {
				t.Fatal(err)
			}
			checkBounds(t, src, 7, 6)
			if got := src.SeqAtTime(0); got != 7 {
				t.Fatalf("SeqAtTime on an empty stream = %d, want 7", got)
			}
		})
	}
}

// TestConsumerSourceFirstSeq: a stream whose sequences start later
// (first_seq) and that never held a message has bounds (first, first-1),
// so a deliver-all consumer starts at first_seq.
func TestConsumerSourceFirstSeq(t *testing.T) {
	for name, st := range sourceStores(t) {
		t.Run(name, func(t *testing.T) {
			if err := st.SkipMsgs(99); err != nil {
				t.Fatal(err)
			}
			src := newStoreSource(st)
			checkBounds(t, src, 100, 99)
			var s cstate.State
			var out cstate.Outcome
			s.Apply(&cstate.Entry{Op: cstate.OpCreate, TS: 1, Gen: 1, Config: &cstate.Config{}}, src, &out)
			if out.Err != nil || s.Delivered().Stream != 99 {
				t.Fatalf("create: %v delivered %+v", out.Err, s.Delivered())
			}
		})
	}
}

// TestConsumerSourceStart creates consumers of each deliver policy on a
// store-backed Source and checks where they start and what they count as
// pending.
func TestConsumerSourceStart(t *testing.T) {
	for name, st := range sourceStores(t) {
		t.Run(name, func(t *testing.T) {
			for i := int64(1); i <= 20; i++ {
				mustStoreMsg(t, st, []string{"k.a", "k.b", "k.c", "z"}[i%4], i*100)
			}
			// k.a at 4, 8, …, k.b at 1, 5, …, k.c at 2, 6, …, z at 3, 7, …
			if _, err := st.RemoveMsg(18); err != nil { // the last k.c
				t.Fatal(err)
			}
			src := newStoreSource(st)
			cases := []struct {
				cfg                cstate.Config
				delivered, pending uint64
			}{
				{cstate.Config{DeliverPolicy: cstate.DeliverAll}, 0, 19},
				{cstate.Config{DeliverPolicy: cstate.DeliverAll, FilterSubjects: []string{"k.*"}}, 0, 14},
				{cstate.Config{DeliverPolicy: cstate.DeliverNew}, 20, 0},
				{cstate.Config{DeliverPolicy: cstate.DeliverLast, FilterSubjects: []string{"k.c"}}, 13, 1},
				{cstate.Config{DeliverPolicy: cstate.DeliverByStartTime, OptStartTime: 1550}, 15, 4},
				{cstate.Config{DeliverPolicy: cstate.DeliverByStartTime, OptStartTime: 1850, FilterSubjects: []string{"k.c"}}, 18, 0},
				// Starts at the first of the last ones (k.c at 14, k.b at 17, k.a at 20), as nats-server.
				{cstate.Config{DeliverPolicy: cstate.DeliverLastPerSubject, FilterSubjects: []string{"k.>"}}, 13, 3},
			}
			for i, c := range cases {
				var s cstate.State
				var out cstate.Outcome
				cfg := c.cfg
				s.Apply(&cstate.Entry{Op: cstate.OpCreate, TS: 1, Gen: 1, Config: &cfg}, src, &out)
				if out.Err != nil {
					t.Fatalf("case %d: %v", i, out.Err)
				}
				if got := s.Delivered().Stream; got != c.delivered {
					t.Fatalf("case %d: delivered %d, want %d", i, got, c.delivered)
				}
				if got := s.NumPending(src); got != c.pending {
					t.Fatalf("case %d: pending %d, want %d", i, got, c.pending)
				}
			}
		})
	}
}
