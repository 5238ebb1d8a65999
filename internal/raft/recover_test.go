package raft

import (
	"slices"
	"testing"
)

// wipe replaces id's storage by an empty one and restarts it, recovering
// or not (Config.Recovering).
func (n *testNet) wipe(id ID, recovering bool) {
	n.st[id] = NewMemoryStorage()
	c := n.cfgs[id]
	c.Recovering = recovering
	n.cfgs[id] = c
	n.restart(id)
}

// A committed entry held by the leader and one follower: the follower
// loses its log, the leader goes down. Voting with its empty log, the
// follower elects the third node, which lacks the entry (the entry is
// lost). Recovering, it abstains: nobody leads until the old leader is
// back, and then the entry survives and the follower catches up.
func TestRecoveringMemberAbstainsUntilCaughtUp(t *testing.T) {
	for _, recovering := range []bool{false, true} {
		n := newTestNet(t, nil, 1, 2, 3)
		n.elect(1)
		n.isolate(2)
		n.propose(1, "a", "b")
		if c := n.raft(1).log.committed; c != 6 { // 3 members, NoOp, a, b
			t.Fatalf("commit %d", c)
		}
		n.down[1] = true
		n.wipe(3, recovering)
		n.heal()
		n.tick(60)
		lead := n.leader()
		if !recovering {
			if lead != 2 || n.raft(2).log.lastIndex() >= 6 {
				t.Fatalf("without recovery: leader %d, its last index %d (expected the unsafe election of 2)", lead, n.raft(2).log.lastIndex())
			}
			continue
		}
		if lead != None {
			t.Fatalf("leader %d elected with the vote of a member that lost its log", lead)
		}
		if !n.node(3).Recovering() {
			t.Fatal("node 3 stopped recovering without hearing from a leader")
		}
		delete(n.down, 1)
		n.restart(1)
		n.tick(60)
		if n.leader() == None {
			t.Fatal("no leader once the old leader is back")
		}
		for _, id := range []ID{1, 2, 3} {
			if got := n.sm[id].data(); !slices.Contains(got, "a") || !slices.Contains(got, "b") {
				t.Fatalf("node %d applied %q", id, got)
			}
		}
		if n.node(3).Recovering() {
			t.Fatal("node 3 still recovering after catching up")
		}
	}
}

// A follower that lost its log while the leader has nothing new to send
// says so in its heartbeat answers, and the leader sends it everything.
func TestLostLogCaughtUpByHeartbeats(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	n.propose(1, "a", "b")
	n.wipe(3, true)
	n.tick(10)
	if got := n.sm[3].data(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("wiped follower applied %q", got)
	}
	if n.node(3).Recovering() {
		t.Fatal("still recovering")
	}
	if pr := n.raft(1).ls.prs[3]; pr.match != n.raft(1).log.lastIndex() {
		t.Fatalf("leader's match for 3: %d, last index %d", pr.match, n.raft(1).log.lastIndex())
	}
}

// A member done recovering grants votes only for terms above the leader
// it recovered under: it may have voted in that term before its loss.
func TestRecoveredMemberVotesOnlyAboveItsLeadersTerm(t *testing.T) {
	rc := recovery{active: true}
	if rc.mayVote(5) {
		t.Fatal("voted while recovering")
	}
	rc.heard(Message{Type: MsgHeartbeat, Term: 4, Commit: 9}, 9)
	if !rc.active {
		t.Fatal("a heartbeat's commit is the follower's, not the leader's")
	}
	rc.heard(Message{Type: MsgApp, Term: 4, Commit: 9}, 7)
	if !rc.active || rc.mayVote(5) {
		t.Fatal("caught up before holding the leader's commit")
	}
	rc.heard(Message{Type: MsgApp, Term: 4, Commit: 12}, 9)
	if rc.active || rc.mayVote(4) || !rc.mayVote(5) {
		t.Fatalf("after catching up: %+v", rc)
	}
}
