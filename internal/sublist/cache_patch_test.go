package sublist

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestLiteralPrefix(t *testing.T) {
	for pattern, want := range map[string]string{
		"$JS.API.DIRECT.GET.s4.>": "$JS.API.DIRECT.GET.s4.",
		"a.*.c":                   "a.",
		"*.b":                     "",
		">":                       "",
		"a.b.*":                   "a.b.",
	} {
		if got := literalPrefix(pattern); got != want {
			t.Errorf("literalPrefix(%q) = %q, want %q", pattern, got, want)
		}
	}
}

// Wildcard inserts and removes patch the cached results of the subjects
// they match, and only those: every cached Match agrees with a sublist
// that never cached anything.
func TestWildcardPatchKeepsCacheExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	toks := []string{"a", "b", "ab", "a.b", "c"}
	subject := func(wild bool) string {
		n := 1 + rng.IntN(4)
		parts := make([]string, 0, n)
		for i := 0; i < n; i++ {
			switch {
			case wild && i == n-1 && rng.IntN(3) == 0:
				parts = append(parts, ">")
			case wild && rng.IntN(3) == 0:
				parts = append(parts, "*")
			default:
				parts = append(parts, toks[rng.IntN(len(toks))])
			}
		}
		return strings.Join(parts, ".")
	}
	s := New[int]()
	var live []sub
	var lits []string
	for i := 0; i < 60; i++ {
		lits = append(lits, subject(false))
	}
	for step := 0; step < 600; step++ {
		switch {
		case len(live) > 0 && rng.IntN(3) == 0:
			i := rng.IntN(len(live))
			mustRemove(t, s, live[i])
			live = slices.Delete(live, i, i+1)
		default:
			x := sub{subject(true), "", step}
			mustInsert(t, s, x)
			live = append(live, x)
		}
		for k := 0; k < 4; k++ { // twice each: admitted to the cache
			lit := lits[rng.IntN(len(lits))]
			s.Match(lit)
			s.Match(lit)
		}
		checkHeads(t, s)
		fresh := New[int]()
		mustInsert(t, fresh, live...)
		for _, lit := range lits {
			if got, want := canon(s.Match(lit)), canon(fresh.Match(lit)); !slices.Equal(got, want) {
				t.Fatalf("step %d: Match(%q) = %v, want %v", step, lit, got, want)
			}
		}
	}
}

// checkHeads fails unless s's heads count exactly the cached subjects.
func checkHeads(t *testing.T, s *Sublist[int]) {
	t.Helper()
	want := cacheHeads{}
	for subject := range s.cache {
		want.add(subject)
	}
	if !maps.Equal(s.cold.heads, want) {
		t.Fatalf("heads %v, want %v", s.cold.heads, want)
	}
}

// A wildcard insert or remove whose literal tokens begin no cached subject
// does not scan the cache (cache_heads.go): a new stream leader's consumer
// and ack subscriptions, and a dead route's, beside a cache of publish
// and STREAM.INFO subjects. One that may match still patches what it
// matches.
func TestWildcardPatchSkipsUnrelatedCache(t *testing.T) {
	s := New[int]()
	mustInsert(t, s, sub{"$JS.API.STREAM.INFO.*", "", 1}, sub{"s.>", "", 2})
	for i := range 500 {
		for _, subj := range []string{fmt.Sprintf("s.%d", i), fmt.Sprintf("$JS.API.STREAM.INFO.s%d", i)} {
			mustInsert(t, s, sub{subj, "", 100 + i}) // a stream's own subject
			s.Match(subj)
			s.Match(subj) // admitted on its second miss
		}
	}
	if n := len(s.cache); n < 900 {
		t.Fatalf("%d subjects cached, want 1,000", n)
	}
	checkHeads(t, s)
	unrelated := []sub{
		{"$JS.API.CONSUMER.MSG.NEXT.s7.*", "", 3},
		{"$JS.ACK.s7.>", "", 4},
		{"$JS.API.DIRECT.GET.s7.>", "", 5},
		{"t.*", "", 6},
	}
	mustInsert(t, s, unrelated...)
	mustRemove(t, s, unrelated...)
	if s.cold.scanned != 0 {
		t.Fatalf("unrelated wildcard inserts and removes looked at %d cached subjects, want none", s.cold.scanned)
	}
	mustInsert(t, s, sub{"$JS.API.STREAM.*.s3", "", 7})
	if s.cold.scanned == 0 {
		t.Fatal("a wildcard matching cached subjects did not scan")
	}
	if got := canon(s.Match("$JS.API.STREAM.INFO.s3")); !slices.Equal(got, []string{"1", "103", "7"}) {
		t.Fatalf("Match after the insert = %v, want [1 103 7]", got)
	}
	checkHeads(t, s)
}

// The heads follow evictions.
func TestCacheHeadsFollowEviction(t *testing.T) {
	s := New[int]()
	mustInsert(t, s, sub{"a.>", "", 1})
	for i := range 3 * maxCache {
		subj := fmt.Sprintf("a.b%d.c.%d", i%7, i)
		mustInsert(t, s, sub{subj, "", i + 2})
		s.Match(subj)
		s.Match(subj)
	}
	checkHeads(t, s)
	if len(s.cold.heads) == 0 {
		t.Fatal("no heads counted")
	}
}
