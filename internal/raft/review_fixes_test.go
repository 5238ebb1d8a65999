package raft

import "testing"

// A member recovering with a floor (it may vote) that still records its
// leader must grant votes once that leader dies: saying hello again used
// to restart its election timer, which kept it in the leader's lease and
// refusing every vote, so the two members left never elected.
func TestRecoveringFloorVotesAfterLeaderDies(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	n.propose(1, "a", "b")
	n.drop = func(m Message) bool { return m.To == 3 && (m.Type == MsgApp || m.Type == MsgSnap) }
	n.discard(3, true)
	n.tick(3)
	if !n.node(3).Recovering() || n.raft(3).lead != 1 {
		t.Fatalf("setup: recovering %v lead %d", n.node(3).Recovering(), n.raft(3).lead)
	}
	n.down[1] = true
	n.drop = nil
	for i := 0; i < 2000; i++ {
		n.tick(1)
		if l := n.leader(); l != None && l != 1 {
			return
		}
	}
	t.Fatalf("no leader among 2 and 3 after 2000 ticks (3 recovering %v, lead %d)", n.node(3).Recovering(), n.raft(3).lead)
}

// With DeferCommit and a lease, the leader answers a follower's read
// index at once; the commit index it held back must go with it, or the
// follower waits for it (up to raftCommitDelay, or the next write).
func TestLeaseReadIndexSendsOwedCommit(t *testing.T) {
	n, reads, _ := newLeaseNet(t, func(c *Config) { c.DeferCommit = true })
	n.propose(1, "c")
	if !n.node(1).CommitOwed() {
		t.Fatal("setup: the commit is not owed")
	}
	if err := n.node(2).ReadIndex([]byte("f")); err != nil {
		t.Fatal(err)
	}
	n.settle()
	if len(reads[2]) != 1 {
		t.Fatalf("reads %+v", reads[2])
	}
	if idx, c := reads[2][0].Index, n.raft(2).log.committed; c < idx {
		t.Fatalf("follower got read index %d, its commit is %d", idx, c)
	}
}

// With one follower's server down (paused), an append to the live one
// carries the commit index: nothing is owed then, so no timer sends a
// commit-only append the live follower does not need.
func TestCommitNotOwedForPausedFollower(t *testing.T) {
	n := newTestNet(t, func(c *Config) { c.DeferCommit = true; c.MaxInflight = 2 }, 1, 2, 3)
	n.elect(1)
	n.tick(1)
	n.down[3] = true
	n.propose(1, "x")
	n.propose(1, "a") // 3 answers neither: its window is full, it is paused
	if !n.raft(1).ls.prs[3].paused() {
		t.Fatal("setup: 3 is not paused")
	}
	if !n.node(1).CommitOwed() {
		t.Fatal("setup: the commit of a is not owed")
	}
	// b's append carries a's commit to 2; 2's answer is lost, so b is not
	// committed and nothing new is owed.
	n.drop = func(m Message) bool { return m.From == 2 && m.Type == MsgAppResp }
	n.propose(1, "b")
	if c := n.raft(2).log.committed; c != n.raft(1).log.committed {
		t.Fatalf("setup: 2's commit %d, leader's %d", c, n.raft(1).log.committed)
	}
	if n.node(1).CommitOwed() {
		t.Fatal("commit still owed although the append to the live follower carried it")
	}
}
