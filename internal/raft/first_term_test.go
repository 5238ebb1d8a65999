package raft

import "testing"

// A founding member given LeadsFirstTerm leads term 1 from its first
// Ready: no vote is asked, its first Ready is durable before its empty
// appends leave, and it serves (LeaderReady) once the membership entries
// are applied, without a no-op.
func TestLeadsFirstTermWithoutElection(t *testing.T) {
	n := newTestNet(t, func(c *Config) { c.LeadsFirstTerm = c.ID == 2 }, 1, 2, 3)
	r := n.raft(2)
	if r.role != Leader || r.term != 1 || r.vote != 2 {
		t.Fatalf("node 2 starts as %s term %d vote %d, want the leader of term 1", r.role, r.term, r.vote)
	}
	rd := n.node(2).Ready()
	if !rd.MustSync || rd.LeaderMayPipeline() {
		t.Fatalf("first Ready: MustSync %v, pipelined %v: its vote must be durable before its appends leave", rd.MustSync, rd.LeaderMayPipeline())
	}
	apps := 0
	for _, m := range rd.Messages {
		if m.Type != MsgApp || m.Term != 1 || len(m.Entries) != 0 {
			t.Fatalf("first Ready sends %s", m)
		}
		apps++
	}
	if apps != 2 {
		t.Fatalf("first Ready sends %d appends, want one to each follower", apps)
	}
	if len(rd.Entries) != 3 || rd.Entries[2].Type != EntryConfChange {
		t.Fatalf("first Ready persists %d entries, want the 3 membership entries and no no-op", len(rd.Entries))
	}
	n.q = append(n.q, rd.Messages...)
	if err := n.drv[2].Log.Save(rd.Snapshot, rd.Entries, rd.HardState); err != nil {
		t.Fatal(err)
	}
	if err := n.drv[2].SM.Apply(rd.CommittedEntries); err != nil {
		t.Fatal(err)
	}
	n.node(2).Advance(rd)
	if st := n.node(2).SoftState(); !st.LeaderReady {
		t.Fatalf("node 2 after its first Ready: %+v, want a ready leader", st)
	}
	n.settle()
	for _, m := range n.sent {
		if m.Type == MsgVote || m.Type == MsgPreVote {
			t.Fatalf("a vote was asked: %s", m)
		}
	}
	for _, id := range []ID{1, 3} {
		if f := n.raft(id); f.term != 1 || f.lead != 2 {
			t.Fatalf("follower %d: term %d lead %d, want term 1 led by 2", id, f.term, f.lead)
		}
	}
	n.propose(2, "a")
	n.tick(2)
	for _, id := range n.ids {
		if got := n.sm[id].data(); len(got) != 1 || got[0] != "a" {
			t.Fatalf("node %d applied %v", id, got)
		}
	}
}

// Only a fresh founding member leads the first term: a restart, a joining
// node and a recovering one start as followers and elect as usual.
func TestLeadsFirstTermOnlyWhenFresh(t *testing.T) {
	n := newTestNet(t, func(c *Config) { c.LeadsFirstTerm = c.ID == 1 }, 1, 2, 3)
	n.settle()
	n.propose(1, "a")
	n.restart(1)
	if r := n.raft(1); r.role != Follower {
		t.Fatalf("restarted node 1 is %s, want a follower", r.role)
	}
	rec := newTestNet(t, func(c *Config) { c.LeadsFirstTerm = true; c.Recovering = c.ID == 1 }, 1)
	if r := rec.raft(1); r.role == Leader {
		t.Fatal("a recovering node leads the first term")
	}
	join := newTestNet(t, nil, 1, 2, 3)
	join.add(4, nil, func(c *Config) { c.LeadsFirstTerm = true })
	if r := join.raft(4); r.role == Leader {
		t.Fatal("a joining node leads the first term")
	}
}

// Nobody else can win term 1: a follower that hears nothing from the
// first leader campaigns for term 2, and the first leader's entries of
// term 1 that a quorum holds survive it.
func TestLeadsFirstTermNoSecondLeaderInTermOne(t *testing.T) {
	n := newTestNet(t, func(c *Config) { c.LeadsFirstTerm = c.ID == 1 }, 1, 2, 3)
	n.settle()
	n.propose(1, "a")
	n.isolate(1)
	n.tick(60)
	lead := n.leader()
	if lead == 1 || lead == None || n.raft(lead).term < 2 {
		t.Fatalf("leader %d term %d after the first leader was cut off", lead, n.raft(lead).term)
	}
	n.heal()
	n.tick(5)
	n.propose(n.leader(), "b")
	for _, id := range n.ids {
		if got := n.sm[id].data(); len(got) != 2 || got[0] != "a" || got[1] != "b" {
			t.Fatalf("node %d applied %v", id, got)
		}
	}
}

// The leader of term 1 keeps its term while its followers have not
// started the group yet (their servers are live but apply the stream's
// creation late): it steps down only once a member it heard from goes
// quiet, or when the members it never heard from are on servers that are
// down, as any leader would.
func TestLeadsFirstTermWaitsForLateFollowers(t *testing.T) {
	live := map[ID]bool{1: true, 2: true, 3: true}
	health := func(id ID) PeerHealth { return PeerHealth{Live: live[id], Quiesces: true} }
	n := newTestNet(t, func(c *Config) { c.LeadsFirstTerm = c.ID == 1; c.PeerHealth = health }, 1, 2, 3)
	n.down[2], n.down[3] = true, true // their groups have not started
	n.tick(5 * n.cfgs[1].ElectionTicks)
	if r := n.raft(1); r.role != Leader || r.term != 1 {
		t.Fatalf("term-1 leader with followers not started yet: %s term %d, want the leader of term 1", r.role, r.term)
	}
	delete(n.down, 2)
	delete(n.down, 3)
	n.tick(1)
	for _, id := range []ID{2, 3} {
		if f := n.raft(id); f.term != 1 || f.lead != 1 {
			t.Fatalf("follower %d started late: term %d lead %d, want term 1 led by 1", id, f.term, f.lead)
		}
	}
	n.propose(1, "a")
	// Heard from: the usual check-quorum applies.
	n.down[2], n.down[3] = true, true
	n.tick(3 * n.cfgs[1].ElectionTicks)
	if r := n.raft(1); r.role == Leader {
		t.Fatal("a term-1 leader cut off from followers it heard from keeps leading")
	}

	// Followers never heard from whose servers are down: it steps down.
	live = map[ID]bool{1: true}
	d := newTestNet(t, func(c *Config) { c.LeadsFirstTerm = c.ID == 1; c.PeerHealth = health }, 1, 2, 3)
	d.down[2], d.down[3] = true, true
	d.tick(3 * d.cfgs[1].ElectionTicks)
	if r := d.raft(1); r.role == Leader {
		t.Fatal("a term-1 leader whose followers' servers are down keeps leading")
	}

	// Followers whose servers are live but whose groups never start: the
	// grace ends after firstTermGraceRounds check-quorum rounds.
	live = map[ID]bool{1: true, 2: true, 3: true}
	g := newTestNet(t, func(c *Config) { c.LeadsFirstTerm = c.ID == 1; c.PeerHealth = health }, 1, 2, 3)
	g.down[2], g.down[3] = true, true
	g.tick((firstTermGraceRounds + 2) * 2 * g.cfgs[1].ElectionTicks)
	if r := g.raft(1); r.role == Leader {
		t.Fatal("a term-1 leader whose followers never start keeps leading past its grace")
	}
}
