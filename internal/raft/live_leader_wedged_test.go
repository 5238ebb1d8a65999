package raft

import "testing"

// A quiet group whose leader's group is wedged (a disk stall: it sends
// and takes nothing) while its server stays live: a follower woken (by a
// member's message) waits its election timeout and the live-leader wait, then
// campaigns; the other follower, asleep, is woken by the request and
// answers it once its lease for the wedged leader ran out. A new leader
// is elected within a bounded number of ticks.
func TestLiveLeaderWedgedQuietLeaderReplaced(t *testing.T) {
	n := quietLedByOne(t)
	// 1's group is wedged: it sends and takes nothing
	n.drop = func(m Message) bool { return m.From == 1 || m.To == 1 }
	// 2 is woken (say, by another member's message)
	n.raft(2).unquiet()
	et := n.raft(2).t.electionTimeout
	limit := 2*et + 2*et + 4*et // randomized timeout, the wait, and a round of pre-vote and vote
	for k := 0; k < limit; k++ {
		for _, id := range []ID{2, 3} {
			n.node(id).Tick()
		}
		n.settle()
		for _, id := range []ID{2, 3} {
			if n.raft(id).role == Leader {
				return
			}
		}
	}
	t.Fatalf("no new leader %d ticks after the wedged leader's follower woke: 2 %s (lead %d, quiet %v, campaigns %d), 3 %s (lead %d, quiet %v)",
		limit, n.raft(2).role, n.raft(2).lead, n.raft(2).quiet, campaignsOf(n, 2), n.raft(3).role, n.raft(3).lead, n.raft(3).quiet)
}

// quietLedByOne is a quiet three-member group led by 1, one entry
// committed, its followers waiting LiveLeaderWait (two election timeouts)
// for a live leader.
func quietLedByOne(t *testing.T) *testNet {
	n := quietNet(t, nil)
	for _, id := range n.ids {
		n.raft(id).liveLeaderWait = 2 * n.raft(id).t.electionTimeout
	}
	n.elect(1)
	n.propose(1, "a")
	n.quietAll(40)
	return n
}
