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
	if rc.mayVote(5, LogPosition{}) {
		t.Fatal("voted while recovering")
	}
	rc.heard(Message{Type: MsgHeartbeat, Term: 4, Commit: 9}, 9, LogPosition{})
	if !rc.active {
		t.Fatal("a heartbeat's commit is the follower's, not the leader's")
	}
	rc.heard(Message{Type: MsgApp, Term: 4, Commit: 9}, 7, LogPosition{})
	if !rc.active || rc.mayVote(5, LogPosition{}) {
		t.Fatal("caught up before holding the leader's commit")
	}
	rc.heard(Message{Type: MsgApp, Term: 4, Commit: 12}, 9, LogPosition{})
	if rc.active || rc.mayVote(4, LogPosition{}) || !rc.mayVote(5, LogPosition{}) {
		t.Fatalf("after catching up: %+v", rc)
	}
}

// discard replaces id's log by an empty one that keeps its stored term and
// vote, and restarts it recovering with the discarded log's last entry as
// its floor: what the server does when a damaged snapshot or store makes a
// replica discard a log it could still read.
func (n *testNet) discard(id ID, withFloor bool) LogPosition {
	old := n.st[id]
	last, _ := old.LastIndex()
	term, _ := old.Term(last)
	floor := LogPosition{Term: term, Index: last}
	hs := old.HardState()
	n.st[id] = NewMemoryStorage()
	n.st[id].SetHardState(HardState{Term: hs.Term, Vote: hs.Vote})
	c := n.cfgs[id]
	c.Recovering, c.RecoveringFloor = true, LogPosition{}
	if withFloor {
		c.RecoveringFloor = floor
	}
	n.cfgs[id] = c
	n.restart(id)
	return floor
}

// Stream simulator seed 2431 in miniature. Node 3 leads {1,2,3}; node 2
// is down when 3 appends the removal of 1, so the removal cannot commit,
// but 3 already counts {2,3} (a configuration takes effect when
// appended); 1 leaves for good (the server stops a removed replica's
// group) and 3 restarts. Node 2 comes back having discarded its log. Only
// 3 and 2 can elect anyone, and 3's log holds everything 2 had: with the
// floor 2 votes for 3, the removal commits and 2 catches up. Abstaining
// as without a floor, it waits for a leader that cannot exist.
func TestRecoveringMemberVotesWhenNeededForQuorum(t *testing.T) {
	for _, withFloor := range []bool{false, true} {
		n := newTestNet(t, nil, 1, 2, 3)
		n.elect(3)
		n.propose(3, "a", "b")
		n.down[2] = true
		n.confChange(3, ConfChange{RemovePeer, 1})
		if st := n.node(3).Status(); !st.PendingConf || !slices.Equal(st.Peers, []ID{2, 3}) {
			t.Fatalf("removal of 1: pending %v, members %v", st.PendingConf, st.Peers)
		}
		n.propose(3, "c") // appended, not committed: 2 is down
		n.down[1] = true
		n.restart(3)
		floor := n.discard(2, withFloor)
		n.tick(100)
		if !withFloor {
			if lead := n.leader(); lead != None || !n.node(2).Recovering() {
				t.Fatalf("without a floor: leader %d, 2 recovering %v", lead, n.node(2).Recovering())
			}
			continue
		}
		if lead := n.leader(); lead != 3 {
			t.Fatalf("leader %d, want 3 (2's floor %+v, 3's last %+v)", lead, floor, n.raft(3).lastPosition())
		}
		if st := n.node(3).Status(); st.PendingConf {
			t.Fatal("the removal of 1 did not commit")
		}
		if n.node(2).Recovering() {
			t.Fatal("2 still recovering under a leader")
		}
		for _, id := range []ID{2, 3} {
			if got := n.sm[id].data(); !slices.Equal(got, []string{"a", "b", "c"}) {
				t.Fatalf("node %d applied %q", id, got)
			}
		}
	}
}

// The floor keeps the recovering member's vote from electing a candidate
// that lacks what it acknowledged: "a" and "b" are committed by 1 and 3
// while 2 is cut off; 1 goes down and 3 discards its log. 2 asks 3 for
// votes and is refused (its log is behind 3's floor) until 1 is back.
func TestRecoveringMemberFloorRefusesStaleCandidate(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	n.isolate(2)
	n.propose(1, "a", "b")
	n.down[1] = true
	n.discard(3, true)
	n.heal()
	n.tick(100)
	if lead := n.leader(); lead != None {
		t.Fatalf("leader %d elected lacking entries the recovering member acknowledged", lead)
	}
	if !n.node(3).Recovering() {
		t.Fatal("3 done recovering without a leader")
	}
	n.restart(1)
	n.tick(100)
	if n.leader() == None {
		t.Fatal("no leader once 1 is back")
	}
	for _, id := range []ID{1, 2, 3} {
		if got := n.sm[id].data(); !slices.Equal(got, []string{"a", "b"}) {
			t.Fatalf("node %d applied %q", id, got)
		}
	}
	if n.node(3).Recovering() {
		t.Fatal("3 still recovering after catching up")
	}
}

// The rules of a recovery with a floor.
func TestRecoveryFloorRules(t *testing.T) {
	floor := LogPosition{Term: 3, Index: 10}
	rc := recovery{active: true, floor: floor}
	if rc.mayCampaign() {
		t.Fatal("campaigns behind its floor")
	}
	for _, c := range []struct {
		cand LogPosition
		ok   bool
	}{{LogPosition{3, 9}, false}, {LogPosition{2, 50}, false}, {LogPosition{3, 10}, true}, {LogPosition{4, 1}, true}} {
		if got := rc.mayVote(7, c.cand); got != c.ok {
			t.Errorf("vote for a log ending at %+v: %v", c.cand, got)
		}
	}
	rc.heard(Message{Type: MsgApp, Term: 4, Commit: 30}, 30, LogPosition{Term: 3, Index: 9})
	if !rc.active {
		t.Fatal("done before its log reached the floor")
	}
	rc.heard(Message{Type: MsgHeartbeat, Term: 4, Commit: 2}, 2, LogPosition{Term: 4, Index: 2})
	if rc.active || !rc.mayCampaign() {
		t.Fatal("still recovering with its log past the floor")
	}
}
