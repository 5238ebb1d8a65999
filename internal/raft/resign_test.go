package raft

import (
	"slices"
	"testing"
)

// A leader whose server deposed it while its group was wedged, and whose
// group comes back before its followers elected (they were told it
// stopped, LeaderStopped, and wait out their election timeout), resigns:
// a member holding its whole log campaigns at once, a new leader of the
// next term takes writes, and the old one follows it with the same log.
// A node that does not lead ignores Resign.
func TestResignHandsOverAtOnce(t *testing.T) {
	n := quietLedByOne(t)
	term := n.raft(1).term
	n.node(2).LeaderStopped(1, term)
	n.node(3).LeaderStopped(1, term)
	n.node(2).Resign() // a follower: nothing happens
	n.settle()
	if n.leader() != 1 || n.raft(2).role != Follower || n.raft(2).term != term {
		t.Fatalf("a follower's Resign changed something: leader %d, 2 %s in term %d", n.leader(), n.raft(2).role, n.raft(2).term)
	}
	n.node(1).Resign()
	n.settle()
	l := n.leader()
	if l == None || l == 1 || n.raft(l).term != term+1 {
		t.Fatalf("no new leader of term %d at once: leader %d, 1 %s", term+1, l, n.raft(1).role)
	}
	n.propose(l, "b")
	if r := n.raft(1); r.role != Follower || r.lead != l || r.term != term+1 {
		t.Fatalf("the old leader %s of %d in term %d, want a follower of %d in term %d", r.role, r.lead, r.term, l, term+1)
	}
	want := n.logTerms(l)
	for _, id := range n.ids {
		if got := n.logTerms(id); !slices.Equal(got, want) {
			t.Fatalf("log of %d %v, leader %d's %v", id, got, l, want)
		}
	}
}
