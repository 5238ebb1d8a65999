package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/sublist"
)

// bruteStream is a store read whole through LoadMsg: what Queries must
// answer, computed the slow way.
type bruteStream struct {
	first, last uint64
	subj        map[uint64]string
	ts          map[uint64]int64
}

func readBrute(t *testing.T, s StreamStore) *bruteStream {
	t.Helper()
	var st StreamState
	s.FastState(&st)
	b := &bruteStream{first: st.FirstSeq, last: st.LastSeq, subj: map[uint64]string{}, ts: map[uint64]int64{}}
	var sm StoreMsg
	for seq := uint64(1); seq <= st.LastSeq; seq++ {
		if m, err := s.LoadMsg(seq, &sm); err == nil {
			b.subj[seq], b.ts[seq] = m.Subj, m.TS
		}
	}
	return b
}

func bruteMatch(subj string, filters []string) bool {
	if len(filters) == 0 {
		return true
	}
	for _, f := range filters {
		if f == "" || sublist.MatchLiteral(subj, f) {
			return true
		}
	}
	return false
}

func (b *bruteStream) numPending(from uint64, filters []string, lastPer bool) uint64 {
	var n uint64
	seen := map[string]bool{}
	for seq := b.last; seq >= max(from, 1); seq-- {
		subj, ok := b.subj[seq]
		if !ok || !bruteMatch(subj, filters) || lastPer && seen[subj] {
			continue
		}
		seen[subj] = true
		n++
	}
	return n
}

func (b *bruteStream) lastMatching(filters []string) uint64 {
	for seq := b.last; seq >= 1; seq-- {
		if subj, ok := b.subj[seq]; ok && bruteMatch(subj, filters) {
			return seq
		}
	}
	return 0
}

func (b *bruteStream) seqAtTime(ts int64) uint64 {
	for seq := uint64(1); seq <= b.last; seq++ {
		if t, ok := b.ts[seq]; ok && t >= ts {
			return seq
		}
	}
	return b.last + 1
}

var (
	querySubjects = []string{"a.b", "a.c", "a.d", "b.b.x", "b.c.x", "b.c.y", "c", "d.e.f.g"}
	queryFilters  = [][]string{
		nil, {">"}, {""}, {"a.b"}, {"c"}, {"zz"}, {"a.*"}, {"a.>"}, {"*.b"}, {"*"},
		{"b.*.x"}, {"b.>"}, {"a.b", "a.*"}, {"c", "b.>"}, {"a.b", "b.b.x"}, {"a.b", "a.b"},
		{"a.b", ">"}, {"*.*.*.*", "c"}, {"a.c", "zz"}, {"*.>"}, {"*.*", "b.>"}, {"*.>", "c"},
	}
)

// TestStoreQueriesModel drives every store through random stores,
// removals, purges, compactions, skips and limits, and after each step
// checks every query of Queries against a scan of the whole stream.
func TestStoreQueriesModel(t *testing.T) {
	for _, ordered := range []bool{true, false} {
		t.Run(fmt.Sprintf("ordered=%v", ordered), func(t *testing.T) {
			forEachStore(t, func(t *testing.T, mk storeFactory) {
				for run := range 6 {
					queriesModelRun(t, mk, uint64(run), ordered)
				}
			})
		})
	}
}

func queriesModelRun(t *testing.T, mk storeFactory, seed uint64, ordered bool) {
	rng := rand.New(rand.NewPCG(seed, 77))
	s := mk(t, StoreLimits{})
	defer func() { s.Stop() }()
	var ts int64
	payload := make([]byte, 40)
	for step := range 400 {
		if ordered {
			ts += rng.Int64N(3) // equal timestamps happen
		} else {
			ts = rng.Int64N(300)
		}
		var op string
		switch r := rng.IntN(100); {
		case r < 70:
			op = "store"
			subj := querySubjects[rng.IntN(len(querySubjects))]
			if _, err := s.StoreMsg(subj, nil, payload[:rng.IntN(len(payload))], ts); err != nil {
				t.Fatal(err)
			}
		case r < 84:
			op = "remove"
			_, last := s.Bounds()
			if _, err := s.RemoveMsg(rng.Uint64N(last + 2)); err != nil {
				t.Fatal(err)
			}
		case r < 88:
			_, last := s.Bounds()
			subj := []string{"", "a.b", "a.*", "b.>"}[rng.IntN(4)]
			seq, keep := rng.Uint64N(last+2), rng.Uint64N(4)
			op = fmt.Sprintf("purge %q seq %d keep %d", subj, seq, keep)
			if _, err := s.PurgeEx(subj, seq, keep); err != nil {
				t.Fatal(err)
			}
		case r < 90:
			op = "purge all"
			if _, err := s.Purge(); err != nil {
				t.Fatal(err)
			}
		case r < 93:
			first, _ := s.Bounds()
			op = "compact"
			if _, err := s.Compact(first + rng.Uint64N(8)); err != nil {
				t.Fatal(err)
			}
		case r < 95:
			op = "skip"
			if err := s.SkipMsgs(1 + rng.Uint64N(3)); err != nil {
				t.Fatal(err)
			}
		case r < 97:
			op = "reopen"
			s = reopenIfFile(t, s)
		default:
			lim := StoreLimits{MaxMsgsPerSubject: rng.Int64N(6), MaxMsgs: rng.Int64N(2) * rng.Int64N(80)}
			op = fmt.Sprintf("limits %+v", lim)
			if err := s.UpdateLimits(lim); err != nil {
				t.Fatal(err)
			}
		}
		checkQueries(t, s, rng, fmt.Sprintf("seed %d step %d (%s)", seed, step, op))
		if t.Failed() {
			return
		}
	}
}

func checkQueries(t *testing.T, s StreamStore, rng *rand.Rand, at string) {
	t.Helper()
	b := readBrute(t, s)
	if first, last := s.Bounds(); first != b.first || last != b.last {
		t.Fatalf("%s: bounds %d,%d want %d,%d", at, first, last, b.first, b.last)
	}
	for seq := uint64(0); seq <= b.last+1; seq++ {
		_, want := b.subj[seq]
		if got := s.Contains(seq); got != want {
			t.Fatalf("%s: contains %d = %v", at, seq, got)
		}
	}
	for range 12 {
		filters := queryFilters[rng.IntN(len(queryFilters))]
		from := rng.Uint64N(b.last + 3)
		lastPer := rng.IntN(3) == 0
		if got, want := s.NumPending(from, slices.Clone(filters), lastPer), b.numPending(from, filters, lastPer); got != want {
			t.Fatalf("%s: NumPending(%d, %q, %v) = %d, want %d", at, from, filters, lastPer, got, want)
		}
		if got, want := s.LastMatching(filters), b.lastMatching(filters); got != want {
			t.Fatalf("%s: LastMatching(%q) = %d, want %d", at, filters, got, want)
		}
		ts := rng.Int64N(320) - 5
		if got, want := s.SeqAtTime(ts), b.seqAtTime(ts); got != want {
			t.Fatalf("%s: SeqAtTime(%d) = %d, want %d", at, ts, got, want)
		}
	}
}

// reopenIfFile stops a file store and opens its directory again (its
// state then comes from the checkpoint); other stores are kept.
func reopenIfFile(t *testing.T, s StreamStore) StreamStore {
	fs, ok := s.(*fileStore)
	if !ok {
		return s
	}
	if err := fs.Stop(); err != nil {
		t.Fatal(err)
	}
	return mustOpenFileStore(t, fs.fsys, fs.dir, fs.cfg, fs.limits)
}

// TestWildFilterMatch checks the split pattern matcher against
// sublist.MatchLiteral on every pair of a set of subjects and patterns.
func TestWildFilterMatch(t *testing.T) {
	subjs := []string{"a", "b", "a.b", "a.c", "ab.c", "a.b.c", "a.b.c.d", "b.a.c", "aa", "a.bb", "x.a.b"}
	pats := []string{"*", "a.*", "*.b", "*.*", "a.>", "*.>", "a.*.c", "a.b.*", "*.b.>", "a.*.>", "*.*.*", "b.*.c", "a.b.>", "ab.*", "x.*.b"}
	for _, p := range pats {
		w := compileWild(p)
		for _, s := range subjs {
			if got, want := w.match(s), sublist.MatchLiteral(s, p); got != want {
				t.Errorf("%q ~ %q = %v, want %v", s, p, got, want)
			}
		}
	}
}
