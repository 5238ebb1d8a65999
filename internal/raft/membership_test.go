package raft

import (
	"errors"
	"slices"
	"testing"
)

func (n *testNet) confChange(lead ID, cc ConfChange) {
	n.t.Helper()
	if err := n.node(lead).ProposeConfChange(cc); err != nil {
		n.t.Fatalf("conf change %+v: %v", cc, err)
	}
	n.settle()
}

func TestAddPeer(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	n.propose(1, "a", "b")
	n.add(4, nil, nil) // joins with no known members
	n.confChange(1, ConfChange{AddPeer, 4})
	n.tick(3)
	for _, id := range n.ids {
		if got := n.raft(id).conf.current(); !slices.Equal(got, []ID{1, 2, 3, 4}) {
			t.Errorf("node %d members %v", id, got)
		}
	}
	if got := n.sm[4].data(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("new peer applied %v", got)
	}
	// The new member now counts: with 2 and 3 down, 1 and 4 are not a quorum of 4.
	n.down[2], n.down[3] = true, true
	_ = n.node(1).Propose([]byte("c"))
	n.settle()
	if c := n.raft(1).log.committed; c == n.raft(1).log.lastIndex() {
		t.Fatalf("committed with 2 of 4")
	}
	// The new member votes: 2, 3 and 4 elect a leader without 1.
	n.down[2], n.down[3] = false, false
	n.isolate(1)
	n.tick(4 * n.cfgs[1].ElectionTicks)
	if l := n.leader(); l == None || l == 1 || n.raft(4).lead != l {
		t.Fatalf("no new leader among 2,3,4: %d (4 follows %d)", l, n.raft(4).lead)
	}
}

func TestAddPeerBySnapshot(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	n.propose(1, "a")
	n.tick(1)
	n.compact(1)
	n.add(4, nil, nil)
	n.confChange(1, ConfChange{AddPeer, 4})
	n.tick(3)
	if n.sm[4].snap == nil || !slices.Equal(n.raft(4).conf.current(), []ID{1, 2, 3, 4}) {
		t.Fatalf("new peer: snap %+v members %v", n.sm[4].snap, n.raft(4).conf.current())
	}
}

func TestRemoveFollower(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	n.confChange(1, ConfChange{RemovePeer, 3})
	n.tick(2)
	if got := n.raft(1).conf.current(); !slices.Equal(got, []ID{1, 2}) {
		t.Fatalf("members %v", got)
	}
	if _, ok := n.raft(1).ls.prs[3]; ok {
		t.Fatal("leader still tracks the removed peer")
	}
	// The removed node stays quiet.
	n.tick(5 * n.cfgs[3].ElectionTicks)
	if r := n.raft(3); r.role != Follower {
		t.Fatalf("removed node is %s", r.role)
	}
	n.propose(1, "x")
	if got := n.sm[2].data(); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("node 2 applied %v", got)
	}
}

func TestRemoveLeaderStepsDownAfterCommit(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	n.tick(1)
	n.confChange(1, ConfChange{RemovePeer, 1})
	n.tick(2)
	if n.raft(1).role == Leader {
		t.Fatal("removed leader still leads")
	}
	l := n.leader()
	if l != 2 && l != 3 {
		t.Fatalf("leader after removal: %d", l)
	}
	if got := n.raft(l).conf.current(); !slices.Equal(got, []ID{2, 3}) {
		t.Fatalf("members %v", got)
	}
	n.propose(l, "after")
}

func TestOneConfChangeAtATime(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	n.tick(1)
	n.isolate(1) // keep the first change uncommitted
	if err := n.node(1).ProposeConfChange(ConfChange{RemovePeer, 3}); err != nil {
		t.Fatal(err)
	}
	if err := n.node(1).ProposeConfChange(ConfChange{AddPeer, 4}); !errors.Is(err, ErrConfChangePending) {
		t.Fatalf("second change: %v", err)
	}
	if err := n.node(2).ProposeConfChange(ConfChange{AddPeer, 4}); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("follower: %v", err)
	}
}

func TestConfChangeWaitsForCurrentTermCommit(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.node(1).Campaign()
	n.drop = func(m Message) bool { return m.Type == MsgApp }
	n.settle()
	if err := n.node(1).ProposeConfChange(ConfChange{AddPeer, 4}); !errors.Is(err, ErrConfChangePending) {
		t.Fatalf("before the no-op committed: %v", err)
	}
	n.drop = nil
	n.tick(1)
	if err := n.node(1).ProposeConfChange(ConfChange{AddPeer, 4}); err != nil {
		t.Fatalf("after the no-op committed: %v", err)
	}
	if err := n.node(1).ProposeConfChange(ConfChange{AddPeer, 5}); !errors.Is(err, ErrConfChangePending) {
		t.Fatalf("pending: %v", err)
	}
}

func TestInvalidConfChange(t *testing.T) {
	n := newTestNet(t, nil, 1, 2)
	n.elect(1)
	n.tick(1)
	for _, cc := range []ConfChange{{AddPeer, 2}, {RemovePeer, 7}} {
		if err := n.node(1).ProposeConfChange(cc); !errors.Is(err, ErrInvalidConfChange) {
			t.Errorf("%+v: %v", cc, err)
		}
	}
}

func TestTruncatedConfChangeIsReverted(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	n.tick(1)
	// 1 appends a removal that reaches only 2's... nobody: it is isolated.
	n.isolate(1)
	if err := n.node(1).ProposeConfChange(ConfChange{RemovePeer, 3}); err != nil {
		t.Fatal(err)
	}
	n.settle()
	if got := n.raft(1).conf.current(); !slices.Equal(got, []ID{1, 2}) {
		t.Fatalf("config takes effect on append: %v", got)
	}
	n.tick(3 * n.cfgs[1].ElectionTicks)
	l := n.leader()
	n.propose(l, "x")
	n.heal()
	n.tick(3)
	if got := n.raft(1).conf.current(); !slices.Equal(got, []ID{1, 2, 3}) {
		t.Fatalf("truncated change not reverted: %v", got)
	}
}

func TestMembershipSurvivesRestart(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	n.tick(1)
	n.confChange(1, ConfChange{RemovePeer, 3})
	n.tick(1)
	n.restart(2)
	if got := n.raft(2).conf.current(); !slices.Equal(got, []ID{1, 2}) {
		t.Fatalf("after restart: %v", got)
	}
	n.settle()
	n.compact(2)
	n.restart(2)
	if got := n.raft(2).conf.current(); !slices.Equal(got, []ID{1, 2}) {
		t.Fatalf("after compaction and restart: %v", got)
	}
}

func TestLeaderTransfer(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	n.propose(1, "a")
	if err := n.node(1).TransferLeadership(3); err != nil {
		t.Fatal(err)
	}
	n.settle()
	if n.leader() != 3 {
		t.Fatalf("leader %d after transfer", n.leader())
	}
	if n.raft(1).role != Follower || n.raft(1).lead != 3 {
		t.Fatalf("old leader: %s following %d", n.raft(1).role, n.raft(1).lead)
	}
}

func TestLeaderTransferToLaggingPeer(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	n.isolate(3)
	n.propose(1, "a", "b")
	n.heal()
	if err := n.node(1).TransferLeadership(3); err != nil {
		t.Fatal(err)
	}
	if err := n.node(1).Propose([]byte("c")); !errors.Is(err, ErrProposalDropped) {
		t.Fatalf("propose during transfer: %v", err)
	}
	n.settle()
	n.tick(2)
	if n.leader() != 3 {
		t.Fatalf("leader %d", n.leader())
	}
	if got := n.sm[3].data(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("new leader applied %v", got)
	}
}

func TestLeaderTransferAbortsAfterTimeout(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	n.down[3] = true
	if err := n.node(1).TransferLeadership(3); err != nil {
		t.Fatal(err)
	}
	n.tick(n.cfgs[1].ElectionTicks)
	if n.raft(1).role != Leader || n.raft(1).ls.transferee != None {
		t.Fatalf("transfer not abandoned: %s transferee %d", n.raft(1).role, n.raft(1).ls.transferee)
	}
	if err := n.node(1).Propose([]byte("x")); err != nil {
		t.Fatalf("propose after abandoned transfer: %v", err)
	}
	if err := n.node(1).TransferLeadership(9); !errors.Is(err, ErrUnknownPeer) {
		t.Fatalf("transfer to stranger: %v", err)
	}
}
