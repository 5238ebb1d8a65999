package raft

import "testing"

// liveLeaderNet is an awake R3 group led by 1 whose followers wait
// LiveLeaderWait ticks for a live leader; live says whose servers are up.
func liveLeaderNet(t *testing.T, wait int) (*testNet, map[ID]bool) {
	live := map[ID]bool{1: true, 2: true, 3: true}
	n := newTestNet(t, func(c *Config) {
		c.LiveLeaderWait = wait
		c.PeerHealth = func(id ID) PeerHealth { return PeerHealth{Live: live[id], Quiesces: true} }
	}, 1, 2, 3)
	n.elect(1)
	n.propose(1, "a")
	return n, live
}

// campaignsOf counts the (pre-)vote requests id sent.
func campaignsOf(n *testNet, id ID) int {
	k := 0
	for _, m := range n.sent {
		if m.From == id && (m.Type == MsgPreVote || m.Type == MsgVote) {
			k++
		}
	}
	return k
}

// tickOnly ticks node id alone k times: its own process runs, the
// leader's heartbeats do not reach it (they wait unread on a saturated
// machine).
func tickOnly(n *testNet, id ID, k int) {
	for range k {
		n.node(id).Tick()
		n.settle()
	}
}

// A follower whose election timeout runs out while its leader's server
// is live does not campaign for LiveLeaderWait ticks more; a heartbeat
// that comes meanwhile keeps the leader. Without the wait it campaigned
// at its (randomized) election timeout.
func TestLiveLeaderFollowerWaits(t *testing.T) {
	n, _ := liveLeaderNet(t, 20)
	et := n.raft(2).t.electionTimeout
	tickOnly(n, 2, 2*et) // past any randomized timeout (at most 2×et)
	if c := campaignsOf(n, 2); c != 0 || n.raft(2).role != Follower {
		t.Fatalf("follower of a live leader campaigned (%d requests, %s) within its wait", c, n.raft(2).role)
	}
	n.tick(1) // the leader's heartbeat arrives: its clock starts again
	if r := n.raft(2); r.t.electionElapsed != 0 || r.lead != 1 || n.leader() != 1 {
		t.Fatalf("after the heartbeat: elapsed %d, lead %d, leader %d", r.t.electionElapsed, r.lead, n.leader())
	}
	tickOnly(n, 2, 4*et) // past the election timeout (< 2×et) and the wait (2×et)
	if campaignsOf(n, 2) == 0 {
		t.Fatal("a follower that heard nothing for election timeout + wait did not campaign (a stuck leader must be replaced)")
	}
}

// With no wait configured, the follower campaigns at its election timeout
// as before (the test above fails so without live_leader.go).
func TestLiveLeaderNoWaitCampaigns(t *testing.T) {
	n, _ := liveLeaderNet(t, 0)
	tickOnly(n, 2, 2*n.raft(2).t.electionTimeout)
	if campaignsOf(n, 2) == 0 {
		t.Fatal("no campaign at the election timeout without a wait")
	}
}

// A follower whose leader's server is down, or whose leader said it
// stopped, campaigns at its election timeout: the wait never delays a
// failover.
func TestLiveLeaderDeadOrStoppedNoWait(t *testing.T) {
	n, live := liveLeaderNet(t, 20)
	live[1] = false
	tickOnly(n, 2, 2*n.raft(2).t.electionTimeout)
	if campaignsOf(n, 2) == 0 {
		t.Fatal("follower of a dead leader's server waited past its election timeout")
	}

	n, _ = liveLeaderNet(t, 20)
	n.node(2).LeaderStopped(1, n.raft(2).term)
	tickOnly(n, 2, 2*n.raft(2).t.electionTimeout)
	if campaignsOf(n, 2) == 0 {
		t.Fatal("follower of a leader that said it stopped waited past its election timeout")
	}
}

// While it waits, the follower's lease has run out as without the wait:
// it grants another member's pre-vote and vote (Raft's rules unchanged),
// so a member that campaigns still wins.
func TestLiveLeaderWaitGrantsVotes(t *testing.T) {
	n, _ := liveLeaderNet(t, 20)
	et := n.raft(2).t.electionTimeout
	n.down[1] = true // the leader's group is stuck; its server looks live
	tickOnly(n, 2, 2*et)
	if campaignsOf(n, 2) != 0 {
		t.Fatal("2 campaigned within its wait")
	}
	n.node(3).Campaign() // 3 (say, told its leader stopped) campaigns
	n.settle()
	if n.leader() != 3 {
		t.Fatalf("3 did not win with 2's vote: leader %d", n.leader())
	}
}
