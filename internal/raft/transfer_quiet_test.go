package raft

import "testing"

// A transfer to a quiescent follower, with the group's third member's
// server down, is not abandoned: the leader wakes, the follower holds its
// whole log, so TimeoutNow goes at once, wakes it and it wins with the old
// leader's vote, all before any tick. (A stepdown that failed in CI was
// blamed on this; the transfers it retried had gone to the dead member,
// see PeerStatus.Live.)
func TestTransferToQuiescentFollowerWithMemberDown(t *testing.T) {
	n := quietNet(t, nil)
	n.elect(1)
	n.propose(1, "a", "b")
	n.quietAll(40)
	n.down[3] = true
	n.livenessChanged()
	if !n.node(1).Quiescent() || !n.node(2).Quiescent() {
		t.Fatal("the group woke when a member's server went")
	}
	st := n.node(1).Status()
	if !st.Progress[1].Live || !st.Progress[2].Live || st.Progress[3].Live {
		t.Fatalf("leader's view of liveness: %+v", st.Progress)
	}
	if err := n.node(1).TransferLeadership(2); err != nil {
		t.Fatal(err)
	}
	n.settle()
	if r := n.raft(2); r.role != Leader {
		t.Fatalf("node 2 did not take over: %s term %d", r.role, r.term)
	}
	if r := n.raft(1); r.role != Follower || r.lead != 2 {
		t.Fatalf("node 1: %s, lead %d", r.role, r.lead)
	}
	n.propose(2, "c")
	if got := n.sm[1].data(); len(got) != 3 || got[2] != "c" {
		t.Fatalf("old leader applied %v", got)
	}
}

// A transfer to a member whose server is down is abandoned after one
// election timeout, and proposals are accepted again.
func TestTransferToDeadMemberAbandoned(t *testing.T) {
	n := quietNet(t, nil)
	n.elect(1)
	n.quietAll(40)
	n.down[3] = true
	n.livenessChanged()
	if err := n.node(1).TransferLeadership(3); err != nil {
		t.Fatal(err)
	}
	if err := n.node(1).Propose([]byte("x")); err != ErrProposalDropped {
		t.Fatalf("proposal during a transfer: %v", err)
	}
	ticks := 0
	for n.node(1).Status().Transferee != None {
		if ticks++; ticks > n.raft(1).t.electionTimeout {
			t.Fatalf("transfer still pending after %d ticks", ticks)
		}
		n.tick(1)
	}
	if n.leader() != 1 {
		t.Fatalf("leader %d", n.leader())
	}
	n.propose(1, "x")
}

// A transfer whose target's server is found down ends at once (not after
// an election timeout): proposals are taken again, and a caller can pick
// another member.
func TestTransferEndsWhenTargetGoesDown(t *testing.T) {
	n := quietNet(t, nil)
	n.elect(1)
	n.propose(1, "a")
	n.drop = func(m Message) bool { return m.Type == MsgTimeoutNow } // 3 dies before it acts
	if err := n.node(1).TransferLeadership(3); err != nil {
		t.Fatal(err)
	}
	n.settle()
	if n.node(1).Status().Transferee != 3 {
		t.Fatal("no transfer pending")
	}
	n.down[3] = true
	n.livenessChanged()
	if tr := n.node(1).Status().Transferee; tr != None {
		t.Fatalf("transfer to a dead member still pending (%d)", tr)
	}
	n.drop = nil
	n.propose(1, "b")
	if err := n.node(1).TransferLeadership(2); err != nil {
		t.Fatal(err)
	}
	n.settle()
	if n.leader() != 2 {
		t.Fatalf("leader %d", n.leader())
	}
}
