package sublist

import (
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
		fresh := New[int]()
		mustInsert(t, fresh, live...)
		for _, lit := range lits {
			if got, want := canon(s.Match(lit)), canon(fresh.Match(lit)); !slices.Equal(got, want) {
				t.Fatalf("step %d: Match(%q) = %v, want %v", step, lit, got, want)
			}
		}
	}
}
