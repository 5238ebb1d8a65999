package sublist

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

// headsModel drives a Sublist with random wildcard and literal inserts and
// removes (patterns beginning with a wildcard, ">" at every depth,
// subjects of one to six tokens, queue groups, large Results that are
// dropped rather than patched) and Matches over more subjects than the
// cache holds (evictions, re-admissions), checking every Match against a
// naive matcher over the live entries and the heads against the cache.
type headsModel struct {
	t    *testing.T
	rng  *rand.Rand
	s    *Sublist[int]
	live []sub
	lits []string
	next int
}

var headsToks = []string{"a", "b", "c", "ab", "$JS", "API"}

func (m *headsModel) tokens(n int, wild bool) string {
	parts := make([]string, 0, n)
	for i := range n {
		switch {
		case wild && i == n-1 && m.rng.IntN(3) == 0:
			parts = append(parts, ">")
		case wild && m.rng.IntN(4) == 0:
			parts = append(parts, "*")
		default:
			parts = append(parts, headsToks[m.rng.IntN(len(headsToks))])
		}
	}
	return strings.Join(parts, ".")
}

func (m *headsModel) want(subject string) []string {
	r := &Result[int]{}
	for _, x := range m.live {
		if MatchLiteral(subject, x.subj) {
			r = r.cloneWith(x.queue, x.v)
		}
	}
	return canon(r)
}

func (m *headsModel) step() {
	switch k := m.rng.IntN(10); {
	case len(m.live) > 0 && k < 4:
		i := m.rng.IntN(len(m.live))
		mustRemove(m.t, m.s, m.live[i])
		m.live = slices.Delete(m.live, i, i+1)
	default:
		var subj string
		if k < 7 {
			subj = m.tokens(1+m.rng.IntN(6), true)
		} else {
			subj = m.lits[m.rng.IntN(len(m.lits))]
		}
		queue := ""
		if m.rng.IntN(4) == 0 {
			queue = fmt.Sprintf("q%d", m.rng.IntN(3))
		}
		// Many entries under one value-distinct pattern grow Results past
		// maxPatch now and then (dropped, not patched).
		n := 1
		if m.rng.IntN(150) == 0 {
			n = maxPatch + 10
		}
		for range n {
			x := sub{subj, queue, m.next}
			m.next++
			mustInsert(m.t, m.s, x)
			m.live = append(m.live, x)
		}
	}
}

func newHeadsModel(t *testing.T, seed uint64) *headsModel {
	m := &headsModel{t: t, rng: rand.New(rand.NewPCG(seed, 11)), s: New[int]()}
	seen := map[string]bool{}
	for len(m.lits) < 3*maxCache {
		if lit := m.tokens(1+m.rng.IntN(6), false); !seen[lit] {
			seen[lit] = true
			m.lits = append(m.lits, lit)
		}
	}
	return m
}

func TestCacheHeadsModel(t *testing.T) {
	for seed := range uint64(4) {
		m := newHeadsModel(t, seed)
		for step := range 1000 {
			m.step()
			for range 20 {
				lit := m.lits[m.rng.IntN(len(m.lits))]
				if m.rng.IntN(2) == 0 {
					lit = m.lits[m.rng.IntN(64)] // hot subjects stay cached
				}
				if got, want := canon(m.s.Match(lit)), m.want(lit); !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d: Match(%q) = %v, want %v", seed, step, lit, got, want)
				}
			}
			if step%50 == 0 {
				checkHeads(t, m.s)
			}
		}
		checkHeads(t, m.s)
		if len(m.s.cache) < sweepTo/2 {
			t.Fatalf("seed %d: only %d subjects cached: the model did not exercise the cache", seed, len(m.s.cache))
		}
	}
}

// Readers matching while writers insert and remove (under -race): after
// the writers stop, every Match agrees with the model and the heads count
// the cache exactly.
func TestCacheHeadsConcurrentReaders(t *testing.T) {
	m := newHeadsModel(t, 42)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 3))
			for {
				select {
				case <-stop:
					return
				default:
				}
				lit := m.lits[rng.IntN(256)]
				if rng.IntN(2) == 0 {
					m.s.Match(lit)
				} else {
					m.s.MatchBytes([]byte(lit))
				}
			}
		}()
	}
	for range 3000 {
		m.step()
	}
	close(stop)
	wg.Wait()
	checkHeads(t, m.s)
	for _, lit := range m.lits[:256] {
		if got, want := canon(m.s.Match(lit)), m.want(lit); !slices.Equal(got, want) {
			t.Fatalf("Match(%q) = %v, want %v", lit, got, want)
		}
	}
}
