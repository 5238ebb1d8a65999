package raft

import (
	"slices"
	"testing"
)

// A leader that resigns while a transfer to a member behind it is under
// way (its server deposed it as its group wedged, server/raft_wedge.go):
// the member holding its whole log campaigns at once and wins the next
// term, the transfer's target (cut off meanwhile) does not lead that term
// too, and once the net heals every log is the new leader's.
func TestResignDuringTransfer(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	n.propose(1, "a")
	n.isolate(3)
	n.propose(1, "b") // 3 is behind
	term := n.raft(1).term
	if err := n.node(1).TransferLeadership(3); err != nil {
		t.Fatal(err)
	}
	n.settle()
	if n.raft(1).ls.transferee != 3 {
		t.Fatalf("no transfer under way: transferee %d", n.raft(1).ls.transferee)
	}
	n.node(1).Resign()
	n.settle()
	if l := n.leader(); l != 2 || n.raft(2).term != term+1 {
		t.Fatalf("leader %d in term %d, want 2 in %d", l, n.raft(l).term, term+1)
	}
	n.heal()
	n.tick(10)
	n.settle()
	n.propose(2, "c")
	leaders := 0
	for _, id := range n.ids {
		if n.raft(id).role == Leader {
			leaders++
		}
	}
	if leaders != 1 || n.leader() != 2 {
		t.Fatalf("%d leaders, highest %d", leaders, n.leader())
	}
	want := n.logTerms(2)
	for _, id := range n.ids {
		if got := n.logTerms(id); !slices.Equal(got, want) {
			t.Fatalf("log of %d %v, leader's %v", id, got, want)
		}
	}
}
