package raft

import "testing"

// electedAfterDeath elects a new leader of a quiet group whose leader's
// server died (ranked.go) and returns it, with the messages sent so far.
func electedAfterDeath(t *testing.T, seed uint64) (*testNet, ID, int) {
	t.Helper()
	n, _ := quietGroupLosesLeader(t, seed, 1)
	n.livenessChanged()
	n.tick(rankFirst)
	l := n.leader()
	if l == None || l == 1 {
		t.Fatalf("no new leader %d tick(s) after the liveness change", rankFirst)
	}
	if !n.raft(l).softState().LeaderReady {
		t.Fatal("the new leader has not applied its NoOp")
	}
	return n, l, len(n.sent)
}

// A leader elected after its predecessor's server died that did nothing
// but commit its NoOp quiets its group at its next heartbeat, with one
// message to the live follower (issue 20: it used to tick and heartbeat
// for an election timeout first, 10 ticks and 28 messages here, 30 group
// wakes per election on the servers, while the dead server's other groups
// still waited for their elections).
func TestJustElectedLeaderQuiescesAtOnce(t *testing.T) {
	for g := range 20 {
		n, l, sent := electedAfterDeath(t, uint64(g)*0x9e3779b97f4a7c15+3)
		hb := n.raft(l).t.heartbeatTimeout
		ticks := n.quietAll(hb)
		msgs := n.sent[sent:]
		if ticks > hb || len(msgs) != 1 || !msgs[0].Quiesce {
			t.Fatalf("group %d: quiet after %d ticks (heartbeat every %d) with %d messages %v, want one quiesce heartbeat",
				g, ticks, hb, len(msgs), msgs)
		}
		for _, id := range n.ids {
			if r := n.raft(id); id != 1 && (r.lead != l || r.log.applied != r.log.lastIndex()) {
				t.Fatalf("group %d: node %d quiet with lead %d, applied %d of %d", g, id, r.lead, r.log.applied, r.log.lastIndex())
			}
		}
		// It wakes for a proposal and commits it as usual.
		n.propose(l, "b")
		if got := n.sm[l].data(); len(got) != 2 || got[1] != "b" {
			t.Fatalf("group %d: after waking the leader applied %v", g, got)
		}
	}
}

// A new leader that was written to or read from in its term waits out the
// election timeout of idleness as before: a group with a trickle of
// writes or reads does not fall asleep and wake at each.
func TestActiveNewLeaderQuiescesAfterTimeout(t *testing.T) {
	for _, tc := range []struct {
		name string
		use  func(n *testNet, l ID)
	}{
		{"proposal", func(n *testNet, l ID) { n.propose(l, "b") }},
		{"read", func(n *testNet, l ID) {
			if err := n.node(l).ReadIndex([]byte("r")); err != nil {
				t.Fatal(err)
			}
			n.settle()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, l, _ := electedAfterDeath(t, 11)
			tc.use(n, l)
			et := n.raft(l).t.electionTimeout
			if ticks := n.quietAll(3 * et); ticks < et {
				t.Fatalf("quiet %d ticks after a %s, want an election timeout (%d) of idleness", ticks, tc.name, et)
			}
		})
	}
}
