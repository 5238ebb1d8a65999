package server

import (
	"fmt"
	"iter"

	"github.com/nats-io/nats-server/v2/internal/sublist"
)

// Overlap checks index one side's subjects in a collision trie
// (sublist.CollisionSet) and look the other side's up in it, so a stream
// with tens of thousands of subjects is checked in time near-linear in
// their number, not in its square. A crafted mix of leading wildcards can
// make single lookups walk the trie; the budget bounds that, and a config
// that exhausts it is refused rather than holding the read loop.

// overlapBudget is the trie visits one check may make for n subjects:
// a few per subject in practice, millions to spare.
func overlapBudget(n int) int { return 1<<22 + 64*n }

func errOverlapTooComplex() *ApiError {
	return errStreamInvalidConfig("subjects too complex to check for overlaps")
}

// checkSubjects validates a stream's subjects: valid, no duplicates and no
// two that collide (some subject matches both), as nats-server requires.
func checkSubjects(subjects []string) *ApiError {
	seen := make(map[string]struct{}, len(subjects))
	for _, s := range subjects {
		if !sublist.ValidSubject(s) {
			return errStreamInvalidConfig(fmt.Sprintf("invalid subject %q", s))
		}
		if _, dup := seen[s]; dup {
			return errStreamInvalidConfig("duplicate subjects detected")
		}
		seen[s] = struct{}{}
	}
	cs := sublist.NewCollisionSet(overlapBudget(len(subjects)))
	for _, s := range subjects {
		hit, err := cs.Collides(s)
		if err != nil {
			return errOverlapTooComplex()
		}
		if hit != "" {
			return errStreamInvalidConfig(fmt.Sprintf("subject %q overlaps with %q", hit, s))
		}
		cs.Add(s)
	}
	return nil
}

// overlapsOthers reports (as 10065) whether any of the other streams'
// subjects collides with subjects.
func overlapsOthers(subjects []string, others iter.Seq[[]string]) *ApiError {
	cs := sublist.NewCollisionSet(overlapBudget(len(subjects)))
	for _, s := range subjects {
		cs.Add(s)
	}
	for subj := range others {
		cs.AddBudget(64 * len(subj))
		for _, s := range subj {
			hit, err := cs.Collides(s)
			if err != nil {
				return errOverlapTooComplex()
			}
			if hit != "" {
				return errSubjectsOverlap()
			}
		}
	}
	return nil
}
