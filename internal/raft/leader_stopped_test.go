package raft

import "testing"

// A quiet follower told that its leader stopped leading (its group halted
// while its server stays up: node liveness shows it alive) wakes and
// elects; told of another leader, or awake, nothing changes.
func TestQuiesceLeaderStoppedElects(t *testing.T) {
	var n *testNet
	n = newTestNet(t, func(c *Config) {
		c.Quiesce = true
		c.PeerHealth = func(ID) PeerHealth { return PeerHealth{Live: true, Quiesces: true} } // every server up
	}, 1, 2, 3)
	n.elect(1)
	n.propose(1, "a")
	n.quietAll(40)
	term := n.raft(1).term
	n.down[1] = true // its group halted: it sends and hears nothing
	n.node(2).LeaderStopped(3, term)
	n.tick(100)
	if l := n.leader(); l != None || !n.node(2).Quiescent() || !n.node(3).Quiescent() {
		t.Fatalf("leader %d, quiet %v %v: woken by the wrong leader's stop, or without one", l, n.node(2).Quiescent(), n.node(3).Quiescent())
	}
	n.node(2).LeaderStopped(1, term)
	n.node(3).LeaderStopped(1, term)
	if !n.newLeaderTakesWrites(t, 1, 4*n.raft(2).t.electionTimeout) {
		t.Fatal("no new leader within four election timeouts of the stop")
	}
}
