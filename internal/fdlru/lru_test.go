package fdlru

import (
	"math/rand"
	"slices"
	"testing"
)

// use pins e, opens it when closed, and unpins it: the victims of both.
func use(l *LRU[int], e *Entry[int]) []int {
	var out []int
	if l.Pin(e) {
		out = append(out, l.Opened(e)...)
	}
	return append(out, l.Unpin(e)...)
}

func TestLimitRespectedLeastRecentFirst(t *testing.T) {
	l := New[int](3)
	es := make([]*Entry[int], 5)
	for i := range es {
		es[i] = l.Add(i)
	}
	for i := range 3 {
		if v := use(l, es[i]); len(v) != 0 {
			t.Fatalf("victims %v under the limit", v)
		}
	}
	use(l, es[0]) // 0 is now the most recent: 1 goes first
	if v := use(l, es[3]); !slices.Equal(v, []int{1}) {
		t.Fatalf("victims %v, want [1]", v)
	}
	if v := use(l, es[4]); !slices.Equal(v, []int{2}) {
		t.Fatalf("victims %v, want [2]", v)
	}
	if l.Open() != 3 || es[1].IsOpen() || es[2].IsOpen() || !es[0].IsOpen() {
		t.Fatalf("open %d, states %v %v %v", l.Open(), es[0].IsOpen(), es[1].IsOpen(), es[2].IsOpen())
	}
}

func TestReopenOnUse(t *testing.T) {
	l := New[int](1)
	a, b := l.Add(1), l.Add(2)
	use(l, a)
	if v := use(l, b); !slices.Equal(v, []int{1}) {
		t.Fatalf("victims %v", v)
	}
	if !l.Pin(a) {
		t.Fatal("an evicted handle must be opened again on use")
	}
	if v := l.Opened(a); !slices.Equal(v, []int{2}) {
		t.Fatalf("victims %v", v)
	}
	if l.Pin(a) {
		t.Fatal("an open handle pinned twice asks for an open")
	}
	l.Unpin(a)
	l.Unpin(a)
}

func TestPinnedNeverEvicted(t *testing.T) {
	l := New[int](2)
	es := []*Entry[int]{l.Add(0), l.Add(1), l.Add(2), l.Add(3)}
	for _, e := range es[:3] {
		if !l.Pin(e) {
			t.Fatal("new handle not closed")
		}
		if v := l.Opened(e); len(v) != 0 {
			t.Fatalf("pinned handles evicted: %v", v)
		}
	}
	if l.Open() != 3 {
		t.Fatalf("open %d: all three pinned stay open", l.Open())
	}
	// Unpinning 1 brings the count back to the limit by closing it.
	if v := l.Unpin(es[1]); !slices.Equal(v, []int{1}) {
		t.Fatalf("victims %v, want [1]", v)
	}
	if v := l.Unpin(es[0]); len(v) != 0 {
		t.Fatalf("victims %v at the limit", v)
	}
	if v := use(l, es[3]); !slices.Equal(v, []int{0}) { // 2 is still pinned
		t.Fatalf("victims %v, want [0]", v)
	}
}

func TestDirtyNeverEvictedUntilSynced(t *testing.T) {
	l := New[int](1)
	a, b := l.Add(1), l.Add(2)
	l.Pin(a)
	l.Opened(a)
	l.Wrote(a)
	gen := l.SyncBegin(a)
	l.Wrote(a) // a write during the sync
	l.Synced(a, gen)
	l.Unpin(a)
	// b, the only idle handle, is closed again right after its use: a
	// stays open, dirty, over the limit.
	if v := use(l, b); !slices.Equal(v, []int{2}) || !a.Dirty() || !a.IsOpen() {
		t.Fatalf("victims %v, dirty %v: a write after the sync began keeps a dirty", v, a.Dirty())
	}
	l.Pin(a)
	l.Synced(a, l.SyncBegin(a))
	if v := l.Unpin(a); len(v) != 0 {
		t.Fatalf("victims %v at the limit", v)
	}
	if v := use(l, b); !slices.Equal(v, []int{1}) {
		t.Fatalf("victims %v: a, clean, goes now", v)
	}
}

func TestRemove(t *testing.T) {
	l := New[int](2)
	a, b := l.Add(1), l.Add(2)
	use(l, a)
	l.Pin(b)
	l.Opened(b)
	if !l.Remove(b) || l.Open() != 1 {
		t.Fatalf("open %d after removing an open handle", l.Open())
	}
	if v := l.Unpin(b); v != nil { // an operation ending after the close
		t.Fatalf("victims %v", v)
	}
	if !l.Remove(a) || l.Remove(a) || l.Open() != 0 {
		t.Fatalf("open %d", l.Open())
	}
}

// A random walk against a model: the open count matches, never exceeds
// max(limit, pinned+dirty), and no pinned or dirty handle is a victim.
func TestRandomAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for round := range 200 {
		limit := 1 + rng.Intn(5)
		l := New[int](limit)
		es := make([]*Entry[int], 8)
		for i := range es {
			es[i] = l.Add(i)
		}
		open := map[int]bool{}
		check := func(victims []int) {
			for _, v := range victims {
				e := es[v]
				if e.Pinned() || e.Dirty() || e.IsOpen() || !open[v] {
					t.Fatalf("round %d: bad victim %d (pinned %v dirty %v)", round, v, e.Pinned(), e.Dirty())
				}
				delete(open, v)
			}
			busy := 0
			for i := range open {
				if es[i].Pinned() || es[i].Dirty() {
					busy++
				}
			}
			if l.Open() != len(open) || l.Open() > max(limit, busy) {
				t.Fatalf("round %d: open %d (model %d, busy %d, limit %d)", round, l.Open(), len(open), busy, limit)
			}
		}
		for range 300 {
			e := es[rng.Intn(len(es))]
			switch op := rng.Intn(4); {
			case op == 0 && e.Pinned():
				check(l.Unpin(e))
			case op == 1 && e.Pinned() && e.IsOpen():
				if rng.Intn(2) == 0 {
					l.Wrote(e)
				} else {
					l.Synced(e, l.SyncBegin(e))
				}
			default:
				if l.Pin(e) {
					open[e.Value] = true
					check(l.Opened(e))
				}
			}
		}
	}
}
