package raft

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/clock"
)

// checkQuorumNet is liveLeaderNet (an awake R3 group led by 1, wait
// LiveLeaderWait ticks) with a lease on clk, counting what the leaders'
// check-quorum found.
func checkQuorumNet(t *testing.T, wait int) (*testNet, map[ID]bool, *clock.Manual, map[CheckQuorumOutcome]int) {
	clk := clock.NewManual(time.Unix(1_000_000, 0))
	lc := leaseConfig(clk)
	live := map[ID]bool{1: true, 2: true, 3: true}
	seen := map[CheckQuorumOutcome]int{}
	n := newTestNet(t, func(c *Config) {
		lc(c)
		c.LiveLeaderWait = wait
		c.PeerHealth = func(id ID) PeerHealth { return PeerHealth{Live: live[id], Quiesces: true} }
		c.OnCheckQuorum = func(o CheckQuorumOutcome) { seen[o]++ }
	}, 1, 2, 3)
	n.elect(1)
	n.propose(1, "a")
	tickClock(n, clk, n.cfgs[1].HeartbeatTicks)
	return n, live, clk, seen
}

// isolateAtCheck cuts leader 1 off just before its next check-quorum and
// ticks it through that check (which counts the answers from before the
// cut): the next check comes an election timeout later and finds none.
func isolateAtCheck(n *testNet, clk *clock.Manual) {
	for n.raft(1).t.electionElapsed != n.raft(1).t.electionTimeout-1 {
		tickClock(n, clk, 1)
	}
	n.isolate(1)
	tickLeaderAlone(n, clk, 1)
	if r := n.raft(1); r.role != Leader || r.t.electionElapsed != 0 {
		n.t.Fatalf("leader at its check before the cut: %s, elapsed %d", r.role, r.t.electionElapsed)
	}
}

// tickLeaderAlone ticks 1 alone k times, the clock moving one tick each:
// its heartbeats and its followers' answers do not arrive (they wait
// unread on a saturated machine).
func tickLeaderAlone(n *testNet, clk *clock.Manual, k int) {
	for range k {
		clk.Advance(testTick)
		tickOnly(n, 1, 1)
	}
}

// A leader that hears from no quorum within an election timeout while
// node liveness says its followers' servers are live leads on for up to
// LiveLeaderWait ticks more, and steps down once that ran out; it holds
// no lease meanwhile. Without check_quorum.go's wait it stepped down at
// the first election timeout, and every group it led elected again.
func TestCheckQuorumWaitsForLiveFollowers(t *testing.T) {
	n, _, clk, seen := checkQuorumNet(t, 20)
	if _, ok := n.node(1).LeaseRead(); !ok {
		t.Fatal("no lease after a round the followers answered")
	}
	isolateAtCheck(n, clk)
	et := n.raft(1).t.electionTimeout
	tickLeaderAlone(n, clk, et)
	if r := n.raft(1); r.role != Leader {
		t.Fatalf("leader of live followers stepped down at its check-quorum (%s; seen %v)", r.role, seen)
	}
	if _, ok := n.node(1).LeaseRead(); ok {
		t.Fatal("a leader that heard from no quorum for an election timeout serves lease reads")
	}
	tickLeaderAlone(n, clk, 20-1)
	if r := n.raft(1); r.role != Leader || seen[CheckQuorumWait] != 2 {
		t.Fatalf("within the wait: %s, seen %v", r.role, seen)
	}
	if _, ok := n.node(1).LeaseRead(); ok {
		t.Fatal("a leader waiting for live followers serves lease reads")
	}
	tickLeaderAlone(n, clk, 1)
	if r := n.raft(1); r.role != Follower || seen[CheckQuorumStepDownLive] != 1 || seen[CheckQuorumWait] != 2 {
		t.Fatalf("past election timeout + wait (%d ticks): %s, seen %v; want a follower", et+20, r.role, seen)
	}
}

// A quorum's answer during the wait ends it: the next silence gets the
// whole wait again, and a round the quorum answers renews the lease.
func TestCheckQuorumWaitEndsOnAnswer(t *testing.T) {
	n, _, clk, seen := checkQuorumNet(t, 20)
	et := n.raft(1).t.electionTimeout
	isolateAtCheck(n, clk)
	tickLeaderAlone(n, clk, et+et/2) // one wait taken, half way through the next timeout
	n.heal()
	tickClock(n, clk, et/2) // the followers answer before the next check
	if r := n.raft(1); r.role != Leader {
		t.Fatalf("after the answers: %s, seen %v", r.role, seen)
	} else if r.ls.cqWaited != 0 {
		t.Fatalf("after the answers: waited %d, seen %v", r.ls.cqWaited, seen)
	}
	if _, ok := n.node(1).LeaseRead(); !ok {
		t.Fatal("no lease after rounds a quorum answered")
	}
	isolateAtCheck(n, clk)
	tickLeaderAlone(n, clk, et+20-1)
	if n.raft(1).role != Leader {
		t.Fatalf("second silence: stepped down before election timeout + the whole wait (seen %v)", seen)
	}
	tickLeaderAlone(n, clk, 1)
	if n.raft(1).role != Follower {
		t.Fatalf("second silence: still leading past election timeout + wait (seen %v)", seen)
	}
}

// A leader whose followers' servers liveness calls dead, or one with no
// wait configured, steps down at the first election timeout as before.
func TestCheckQuorumNoWaitWhenDeadOrOff(t *testing.T) {
	n, live, clk, seen := checkQuorumNet(t, 20)
	live[2], live[3] = false, false
	isolateAtCheck(n, clk)
	tickLeaderAlone(n, clk, n.raft(1).t.electionTimeout)
	if r := n.raft(1); r.role != Follower || seen[CheckQuorumStepDown] != 1 || seen[CheckQuorumWait] != 0 {
		t.Fatalf("leader of dead followers: %s, seen %v; want it to step down at once", r.role, seen)
	}
	n, _, clk, seen = checkQuorumNet(t, 0)
	isolateAtCheck(n, clk)
	tickLeaderAlone(n, clk, n.raft(1).t.electionTimeout)
	if r := n.raft(1); r.role != Follower || seen[CheckQuorumStepDownLive] != 1 {
		t.Fatalf("no wait configured: %s, seen %v; want it to step down at once", r.role, seen)
	}
}

// One live follower of two is no quorum of live servers: no wait.
func TestCheckQuorumNoWaitWithoutLiveQuorum(t *testing.T) {
	n, live, clk, seen := checkQuorumNet(t, 20)
	live[3] = false
	isolateAtCheck(n, clk)
	tickLeaderAlone(n, clk, n.raft(1).t.electionTimeout)
	if r := n.raft(1); r.role != Leader {
		t.Fatalf("self and one live follower are a quorum of three: %s, seen %v", r.role, seen)
	}
	live[2] = false
	tickLeaderAlone(n, clk, n.raft(1).t.electionTimeout)
	if r := n.raft(1); r.role != Follower || seen[CheckQuorumStepDown] != 1 {
		t.Fatalf("liveness says no quorum is live: %s, seen %v; want a step-down", r.role, seen)
	}
}

// A leader cut off from its quorum while node liveness still says the
// members' servers are live (the route up, the group's messages lost)
// must not fall asleep in its check-quorum wait: a quiet leader never
// checks again, and it led on, quiet, after the others elected. Its
// followers' answers from before the cut (progress.fresh) are no answer
// in the current check-quorum round.
func TestCheckQuorumWaitingLeaderDoesNotQuiesce(t *testing.T) {
	n := newTestNet(t, func(c *Config) {
		c.Quiesce = true
		c.LiveLeaderWait = 20
		c.PeerHealth = func(ID) PeerHealth { return PeerHealth{Live: true, Quiesces: true} }
	}, 1, 2, 3)
	n.elect(1)
	n.propose(1, "a") // every member answers: fresh, and holding the whole log
	n.isolate(1)
	et := n.raft(1).t.electionTimeout
	n.tick(6*et + 40) // election timeout + wait for 1, randomized timeout + wait and an election for 2 and 3
	if r := n.raft(1); r.role == Leader {
		t.Fatalf("leader cut off while its peers' servers are live leads on (quiet %v)", r.quiet)
	}
	if l := n.leader(); l != 2 && l != 3 {
		t.Fatalf("no leader among the members that hear each other (%d)", l)
	}
}
