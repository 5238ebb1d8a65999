package sublist

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// randomPattern draws subjects from a small alphabet so that collisions
// are frequent: tokens a, b, *, and > as the last token.
func randomPattern(r *rand.Rand) string {
	n := 1 + r.IntN(4)
	toks := make([]string, n)
	for i := range toks {
		switch r.IntN(7) {
		case 0, 1:
			toks[i] = "a"
		case 2, 3:
			toks[i] = "b"
		case 4, 5:
			toks[i] = "*"
		default:
			if i == n-1 {
				toks[i] = ">"
			} else {
				toks[i] = "c"
			}
		}
	}
	return strings.Join(toks, ".")
}

// The set answers exactly as SubjectsCollide over every stored subject, and
// what it names does collide.
func TestCollisionSetMatchesPairwise(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 2000; round++ {
		cs := NewCollisionSet(1 << 20)
		var stored []string
		for i := r.IntN(6); i > 0; i-- {
			p := randomPattern(r)
			cs.Add(p)
			stored = append(stored, p)
		}
		q := randomPattern(r)
		want := false
		for _, s := range stored {
			want = want || SubjectsCollide(q, s)
		}
		hit, err := cs.Collides(q)
		if err != nil {
			t.Fatal(err)
		}
		if (hit != "") != want || (hit != "" && !SubjectsCollide(q, hit)) {
			t.Fatalf("stored %q, query %q: got %q, want collision %v", stored, q, hit, want)
		}
	}
}

func TestCollisionSetCases(t *testing.T) {
	cs := NewCollisionSet(1 << 20)
	for _, s := range []string{"orders.new", "orders.*.paid", "logs.>", "a"} {
		cs.Add(s)
	}
	for q, want := range map[string]string{
		"orders.new":     "orders.new",
		"orders.old":     "",
		"orders.x.paid":  "orders.*.paid",
		"*.new":          "orders.new|logs.>", // both collide; either may be named
		"orders.>":       "any",
		"logs":           "",
		"logs.x.y":       "logs.>",
		">":              "any",
		"a.>":            "",
		"*":              "a",
		"orders.*.*":     "orders.*.paid",
		"orders.*.other": "",
	} {
		got, err := cs.Collides(q)
		if err != nil {
			t.Fatal(err)
		}
		if (want == "") != (got == "") || (want != "any" && !slices.Contains(strings.Split(want, "|"), got)) {
			t.Errorf("Collides(%q) = %q, want %q", q, got, want)
		}
	}
}

// A query '*' against many literal children that all fail later spends
// the budget instead of running on.
func TestCollisionSetBudget(t *testing.T) {
	cs := NewCollisionSet(1000)
	for i := 0; i < 5000; i++ {
		cs.Add(fmt.Sprintf("k%d.x", i))
	}
	if _, err := cs.Collides("*.y"); !errors.Is(err, ErrCollideBudget) {
		t.Fatalf("err = %v, want ErrCollideBudget", err)
	}
}

// 20,000 literal subjects, then 20,000 wildcards behind literal prefixes:
// each check is a few node visits.
func TestCollisionSetLinear(t *testing.T) {
	const n = 20000
	cs := NewCollisionSet(64 * 2 * n)
	start := time.Now()
	for i := 0; i < n; i++ {
		for _, s := range []string{fmt.Sprintf("orders.%d.new", i), fmt.Sprintf("users.%d.*", i)} {
			if hit, err := cs.Collides(s); hit != "" || err != nil {
				t.Fatalf("%s: %q %v", s, hit, err)
			}
			cs.Add(s)
		}
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v", d)
	}
}

func BenchmarkCollisionSet20k(b *testing.B) {
	subjects := make([]string, 20000)
	for i := range subjects {
		subjects[i] = fmt.Sprintf("orders.%d.*", i)
	}
	b.ReportAllocs()
	for b.Loop() {
		cs := NewCollisionSet(1 << 30)
		for _, s := range subjects {
			if hit, _ := cs.Collides(s); hit != "" {
				b.Fatal(hit)
			}
			cs.Add(s)
		}
	}
}
