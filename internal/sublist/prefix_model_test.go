package sublist

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// 1,000 hot subjects whose results do not depend on their last token
// (t.<i>.ev under t.>) are more prefixes than the prefix cache keeps: the
// subjects must still reach the subject cache, which holds them all. With
// a prefix store that kept them out of it, the hit rate fell from 72% to
// 17% and a match took 4.7 times as long (found by review).
func TestHotPrefixesStayCached(t *testing.T) {
	s := New[int]()
	mustInsert(t, s, sub{"t.>", "", 1})
	subj := make([]string, 1000)
	for i := range subj {
		subj[i] = "t." + strconv.Itoa(i) + ".ev"
	}
	for range 5 {
		for _, x := range subj {
			s.Match(x)
		}
	}
	h0, m0 := s.hits.Load(), s.misses.Load()
	for range 20 {
		for _, x := range subj {
			s.Match(x)
		}
	}
	h, m := s.hits.Load()-h0, s.misses.Load()-m0
	if 2*h < h+m {
		t.Errorf("hit rate %.1f%% for 1,000 hot subjects that fit the subject cache (prefixes cached: %d)",
			100*float64(h)/float64(h+m), len(s.prefix))
	}
}

func BenchmarkHotPrefixes(b *testing.B) {
	s := New[int]()
	mustInsert(b, s, sub{"t.>", "", 1})
	subj := make([]string, 1000)
	for i := range subj {
		subj[i] = "t." + strconv.Itoa(i) + ".ev"
	}
	b.RunParallel(func(pb *testing.PB) {
		j := 0
		for pb.Next() {
			j++
			s.Match(subj[j%len(subj)])
		}
	})
}

// Matches with both caches answer as the naive model does, over random
// inserts and removes of literal and wildcard patterns (queue groups too)
// and subjects whose last token varies: a prefix result reused where a
// literal last token matters, or one kept past a change of the trie,
// fails here.
func TestPrefixCacheMatchesModel(t *testing.T) {
	pats := []string{"a", "b", "*", ">", "a*", "x"}
	lastToks := []string{"a", "b", "x", "*", ">", "a*", "z1", "z2", "z3", "q9"}
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 7))
		s, m := New[int](), model{}
		randPat := func() string {
			n := 1 + r.IntN(4)
			toks := make([]string, n)
			for i := range toks {
				toks[i] = pats[r.IntN(len(pats))]
				if toks[i] == ">" && i != n-1 {
					toks[i] = "*"
				}
			}
			return strings.Join(toks, ".")
		}
		randSubj := func() string {
			n := 1 + r.IntN(4)
			toks := make([]string, n)
			for i := range n - 1 {
				toks[i] = []string{"a", "b", "x"}[r.IntN(3)]
			}
			toks[n-1] = lastToks[r.IntN(len(lastToks))]
			return strings.Join(toks, ".")
		}
		for step := range 300 {
			switch r.IntN(6) {
			case 0:
				e := sub{randPat(), []string{"", "", "q"}[r.IntN(3)], r.IntN(5)}
				if s.Insert(e.subj, e.queue, e.v) == nil {
					m[e] = true
				}
			case 1:
				if len(m) > 0 {
					e := m.sortedKeys()[r.IntN(len(m))]
					if err := s.Remove(e.subj, e.queue, e.v); err != nil {
						t.Fatalf("seed %d: Remove(%+v): %v", seed, e, err)
					}
					delete(m, e)
				}
			default:
				subj := randSubj()
				want := m.want(subj)
				for k := range 3 {
					var got []string
					if k%2 == 0 {
						got = canon(s.Match(subj))
					} else {
						got = canon(s.MatchBytes([]byte(subj)))
					}
					if !slices.Equal(got, want) {
						t.Fatalf("seed %d step %d: Match(%q) = %v, want %v", seed, step, subj, got, want)
					}
				}
			}
		}
	}
}
