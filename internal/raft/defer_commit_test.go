package raft

import (
	"slices"
	"testing"
)

// commitOnly counts the appends without entries that n sent since the
// last reset of n.sent.
func commitOnly(n *testNet) int {
	k := 0
	for _, m := range n.sent {
		if m.Type == MsgApp && len(m.Entries) == 0 {
			k++
		}
	}
	return k
}

// With DeferCommit, a commit is not sent alone: the next append carries
// it, else the next tick or FlushCommit; the leader applies at once.
func TestDeferCommitRidesTheNextAppend(t *testing.T) {
	n := newTestNet(t, func(c *Config) { c.DeferCommit = true }, 1, 2, 3)
	n.elect(1)
	n.tick(1) // whatever the election left owed goes now
	n.sent = nil
	n.propose(1, "a")
	if got := n.sm[1].data(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("leader applied %v, want [a] at once", got)
	}
	if k := commitOnly(n); k != 0 {
		t.Fatalf("%d commit-only appends sent, want none", k)
	}
	if !n.node(1).CommitOwed() {
		t.Fatal("the leader owes its followers the commit of a")
	}
	for _, id := range []ID{2, 3} {
		if got := n.sm[id].data(); len(got) != 0 {
			t.Fatalf("follower %d applied %v before hearing the commit", id, got)
		}
	}
	n.propose(1, "b") // its append carries a's commit
	for _, id := range []ID{2, 3} {
		if got := n.sm[id].data(); !slices.Equal(got, []string{"a"}) {
			t.Fatalf("follower %d applied %v, want [a]", id, got)
		}
	}
	if k := commitOnly(n); k != 0 {
		t.Fatalf("%d commit-only appends sent, want none", k)
	}
	n.node(1).FlushCommit()
	n.settle()
	if n.node(1).CommitOwed() {
		t.Fatal("still owed after FlushCommit")
	}
	for _, id := range []ID{2, 3} {
		if got := n.sm[id].data(); !slices.Equal(got, []string{"a", "b"}) {
			t.Fatalf("follower %d applied %v after FlushCommit, want [a b]", id, got)
		}
	}
}

// A tick sends a commit held back, and a leader owing one does not go
// quiet.
func TestDeferCommitSentByTick(t *testing.T) {
	n := newTestNet(t, func(c *Config) { c.DeferCommit = true; c.Quiesce = true }, 1, 2, 3)
	n.elect(1)
	n.tick(1)
	n.propose(1, "a")
	if !n.node(1).CommitOwed() {
		t.Fatal("commit of a not owed")
	}
	if n.raft(1).idle() {
		t.Fatal("a leader owing a commit counts as idle")
	}
	n.node(1).Tick()
	n.settle()
	if n.node(1).CommitOwed() {
		t.Fatal("still owed after a tick")
	}
	for _, id := range []ID{2, 3} {
		if got := n.sm[id].data(); !slices.Equal(got, []string{"a"}) {
			t.Fatalf("follower %d applied %v after the tick, want [a]", id, got)
		}
	}
}

// Without DeferCommit the commit goes at once, alone.
func TestCommitSentAtOnceByDefault(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	n.tick(1)
	n.sent = nil
	n.propose(1, "a")
	if k := commitOnly(n); k != 2 {
		t.Fatalf("%d commit-only appends, want one per follower", k)
	}
	if n.node(1).CommitOwed() {
		t.Fatal("owed without DeferCommit")
	}
}
