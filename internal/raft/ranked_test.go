package raft

import "testing"

// quietGroupLosesLeader makes a quiet 3-node group with seed led by lead,
// whose leader's server then dies, and returns it with the term it had.
func quietGroupLosesLeader(t *testing.T, seed uint64, lead ID) (*testNet, uint64) {
	t.Helper()
	n := quietNetSeed(t, nil, seed)
	n.elect(lead)
	n.propose(lead, "a")
	n.quietAll(40)
	n.down[lead] = true
	return n, n.raft(lead).term
}

// After the server of a quiet group's leader dies, the survivor first in
// the group's order is elected at its next tick, in one election (the
// term rises by one: no split vote), and across groups each survivor goes
// first about as often as the other. With randomized timeouts alone the
// first campaign came 10 to 19 ticks after the liveness change.
func TestRankedElectionAfterLeaderDeath(t *testing.T) {
	const groups = 90
	wins := map[[2]ID]int{} // (dead leader, new leader)
	for g := range groups {
		dead := ID(1 + g%3)
		n, term := quietGroupLosesLeader(t, uint64(g)*0x2545f4914f6cdd1d+7, dead)
		n.livenessChanged()
		n.tick(rankFirst)
		l := n.leader()
		if l == None || l == dead {
			t.Fatalf("group %d: no new leader %d tick(s) after the liveness change", g, rankFirst)
		}
		for _, id := range n.ids {
			if r := n.raft(id); id != dead && r.term != term+1 {
				t.Fatalf("group %d: node %d at term %d, want %d (one election)", g, id, r.term, term+1)
			}
		}
		n.propose(l, "b")
		if got := n.sm[l].data(); len(got) != 2 {
			t.Fatalf("group %d: new leader %d applied %v", g, l, got)
		}
		wins[[2]ID{dead, l}]++
	}
	t.Logf("wins: %v", wins)
	for dead := ID(1); dead <= 3; dead++ {
		for l := ID(1); l <= 3; l++ {
			if l != dead && wins[[2]ID{dead, l}] < groups/3/4 {
				t.Errorf("node %d took %d of the %d groups node %d led: %v", l, wins[[2]ID{dead, l}], groups/3, dead, wins)
			}
		}
	}
}

// A survivor that learns of the death after the first in turn asked for
// its pre-vote refused it (in silence: it still protected its leader) and
// woke from that request, not from liveness. Once liveness tells it, it
// forgets its quiet leader all the same and answers the pre-vote it
// refused: the group is led at once, not after an election timeout of
// refused votes and the candidate's next try.
func TestRankedElectionSurvivorLearnsLate(t *testing.T) {
	for g := range 40 {
		seed := uint64(g) * 0x9e3779b97f4a7c15
		n, term := quietGroupLosesLeader(t, seed, 1)
		first := ID(2)
		if rankKey(seed, 3) < rankKey(seed, 2) {
			first = 3
		}
		late := 5 - first
		n.node(first).LivenessChanged()
		n.settle()
		n.tick(rankFirst) // its pre-vote reaches the late one, still quiet
		if n.leader() != None {
			t.Fatalf("group %d: elected before the late survivor learned", g)
		}
		if n.node(late).Quiescent() || n.raft(late).lead != 1 {
			t.Fatalf("group %d: the late survivor was not woken by the pre-vote", g)
		}
		n.node(late).LivenessChanged()
		n.settle()
		if l := n.leader(); l != first || n.raft(l).term != term+1 {
			t.Fatalf("group %d: leader %d at term %d once the late survivor learned, want %d at %d",
				g, l, n.raft(first).term, first, term+1)
		}
	}
}

// The turns follow the live members only: with one follower cut off
// too, the other is first and campaigns at its next tick (in vain here,
// without a quorum), and the ranked wait of a member is ended by the
// first campaign (it falls back to randomized timeouts).
func TestRankedElectionCountsLiveMembersOnly(t *testing.T) {
	n, term := quietGroupLosesLeader(t, 1, 1)
	n.isolate(3)
	n.livenessChanged()
	if n.raft(2).rank() != 0 {
		t.Fatalf("node 2 ranked %d with only itself live", n.raft(2).rank())
	}
	n.tick(rankFirst)
	if r := n.raft(2); r.role != PreCandidate || r.t.ranked || r.t.randomizedTimeout < r.t.electionTimeout {
		t.Fatalf("node 2: role %s ranked %v timeout %d", r.role, r.t.ranked, r.t.randomizedTimeout)
	}
	n.heal()
	n.livenessChanged()
	n.tick(3 * n.raft(2).t.electionTimeout)
	if l := n.leader(); l == None || l == 1 || n.raft(l).term <= term {
		t.Fatalf("leader %d after healing", l)
	}
}

// In an awake group (its leader holds a lease) the survivors still take
// turns after the leader's server died, but only once the lease ran out:
// nobody is elected before an election timeout since the leader's last
// heartbeat, the first in turn is one tick later, in one election, and
// across groups each survivor goes first about as often. With randomized
// timeouts the first campaign came anywhere up to twice the election
// timeout, and survivors drawing the same tick split the vote.
func TestRankedElectionAwakeGroupAfterLease(t *testing.T) {
	const groups = 60
	wins := map[ID]int{}
	for g := range groups {
		n := quietNetSeed(t, nil, uint64(g)*0x2545f4914f6cdd1d+3)
		n.elect(1)
		n.propose(1, "a") // the group is awake: a heartbeat round per tick
		n.tick(2)
		if n.node(2).Quiescent() || n.node(3).Quiescent() {
			t.Fatalf("group %d: followers quiet already", g)
		}
		term, timeout := n.raft(1).term, n.raft(2).t.electionTimeout
		n.down[1] = true
		n.livenessChanged()
		k := 0
		for ; k < 3*timeout && n.leader() == None; k++ {
			n.tick(1)
			if n.leader() != None && k+1 < timeout {
				t.Fatalf("group %d: leader %d elected %d ticks after the last heartbeat, inside the lease", g, n.leader(), k+1)
			}
		}
		l := n.leader()
		if l == None || k > timeout+rankFirst {
			t.Fatalf("group %d: leader %d after %d ticks, want one within %d", g, l, k, timeout+rankFirst)
		}
		for _, id := range []ID{2, 3} {
			if r := n.raft(id); r.term != term+1 {
				t.Fatalf("group %d: node %d at term %d, want %d (one election)", g, id, r.term, term+1)
			}
		}
		wins[l]++
	}
	t.Logf("wins: %v", wins)
	if wins[2] < groups/4 || wins[3] < groups/4 {
		t.Fatalf("uneven: %v", wins)
	}
}

// In an awake group the first in turn may ask before the other survivor's
// election clock counted the leader's lease out (the servers' clocks tick
// out of phase, a busy group misses ticks): the other refuses in silence,
// but answers at the tick that ends the lease, so the group is led then,
// not when the other's own turn comes an election timeout later.
func TestRankedElectionAwakeHeldPreVote(t *testing.T) {
	for g := range 20 {
		seed := uint64(g)*0x2545f4914f6cdd1d + 5
		n := quietNetSeed(t, nil, seed)
		n.elect(1)
		n.propose(1, "a")
		n.tick(2)
		term, timeout := n.raft(1).term, n.raft(2).t.electionTimeout
		first := ID(2)
		if rankKey(seed, 3) < rankKey(seed, 2) {
			first = 3
		}
		other := 5 - first
		n.down[1] = true
		n.livenessChanged()
		lag := 2 // the other's clock is two ticks behind
		for range lag {
			n.node(first).Tick()
			n.settle()
		}
		k := 0
		for ; k < 3*timeout && n.leader() == None; k++ {
			n.tick(1)
		}
		if n.raft(first).t.electionElapsed == 0 && n.leader() == None {
			t.Fatalf("group %d: the first in turn never campaigned", g)
		}
		l := n.leader()
		// The other's lease ends at its tick number timeout, k-th here.
		if l != first || k != timeout || n.raft(other).term != term+1 {
			t.Fatalf("group %d: leader %d after %d ticks of the other (term %d), want %d after %d (term %d)",
				g, l, k, n.raft(other).term, first, timeout, term+1)
		}
	}
}
