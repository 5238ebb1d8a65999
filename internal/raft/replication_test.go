package raft

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

func TestReplicateAndApplyEverywhere(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	n.propose(1, "a", "b", "c")
	n.tick(2) // heartbeats carry the final commit
	for _, id := range n.ids {
		if got := n.sm[id].data(); !slices.Equal(got, []string{"a", "b", "c"}) {
			t.Errorf("node %d applied %v", id, got)
		}
	}
	if err := n.node(2).Propose([]byte("x")); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("follower propose: %v", err)
	}
}

func TestLeaderReadyOnlyAfterNoOpApplied(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.node(1).Campaign()
	// Run the election but keep the NoOp from reaching followers.
	n.drop = func(m Message) bool { return m.Type == MsgApp && len(m.Entries) > 0 }
	n.settle()
	ss := n.node(1).SoftState()
	if ss.Role != Leader || ss.LeaderReady {
		t.Fatalf("soft state %+v: leader must not be ready before its no-op commits", ss)
	}
	n.drop = nil
	n.tick(1)
	if ss := n.node(1).SoftState(); !ss.LeaderReady {
		t.Fatalf("soft state %+v after the no-op committed", ss)
	}
	// The driver saw the change in a Ready.
	if !n.raft(1).log.matchTerm(n.raft(1).ls.noopIndex, n.raft(1).term) {
		t.Fatal("no-op is not of the leader's term")
	}
}

func TestProposalsAreBatched(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	n.sent = nil
	for i := range 50 {
		if err := n.node(1).Propose(fmt.Appendf(nil, "p%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	n.settle()
	apps := 0
	for _, m := range n.sent {
		if m.Type == MsgApp && len(m.Entries) > 0 {
			apps++
			if len(m.Entries) != 50 {
				t.Errorf("append carried %d entries", len(m.Entries))
			}
		}
	}
	if apps != 2 {
		t.Fatalf("%d appends with entries for 2 followers", apps)
	}
}

func TestPipeliningBoundedByInflight(t *testing.T) {
	testPipeliningBounded(t, func(c *Config) { c.MaxInflight = 3; c.MaxBatchBytes = 1 })
}

// With entries of 2 bytes, one per append, 5 bytes in flight stop the
// leader after the third append.
func TestPipeliningBoundedByInflightBytes(t *testing.T) {
	testPipeliningBounded(t, func(c *Config) { c.MaxInflightBytes = 5; c.MaxBatchBytes = 1 })
}

func testPipeliningBounded(t *testing.T, cfg func(*Config)) {
	n := newTestNet(t, cfg, 1, 2)
	n.elect(1)
	// Hold every message: the leader may only have 3 appends out.
	var held []Message
	n.drop = func(m Message) bool { held = append(held, m); return true }
	for i := range 10 {
		if err := n.node(1).Propose(fmt.Appendf(nil, "p%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	n.settle()
	if len(held) != 3 {
		t.Fatalf("%d appends in flight, want 3 (pipelined up to MaxInflight)", len(held))
	}
	if !n.raft(1).ls.prs[2].paused() {
		t.Fatal("progress not paused with a full window")
	}
	// Acknowledge them: the window opens and the rest flows.
	n.drop = nil
	for _, m := range held {
		if err := n.node(2).Step(m); err != nil {
			t.Fatal(err)
		}
	}
	n.settle()
	if got := n.raft(1).ls.prs[2].match; got != n.raft(1).log.lastIndex() {
		t.Fatalf("follower match %d, leader last %d", got, n.raft(1).log.lastIndex())
	}
}

func TestFollowerConflictingTailIsTruncated(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	// 1 appends entries no one else gets, then loses leadership.
	n.isolate(1)
	for i := range 5 {
		_ = n.node(1).Propose(fmt.Appendf(nil, "lost%d", i))
	}
	n.settle()
	n.tick(3 * n.cfgs[1].ElectionTicks)
	lead := n.leader()
	if lead == 1 || lead == None {
		t.Fatalf("leader %d", lead)
	}
	n.propose(lead, "kept")
	n.heal()
	n.sent = nil
	n.tick(3)
	if !slices.Equal(n.logTerms(1), n.logTerms(lead)) {
		t.Fatalf("logs differ: %v vs %v", n.logTerms(1), n.logTerms(lead))
	}
	rejects := 0
	for _, m := range n.sent {
		if m.Type == MsgAppResp && m.Reject && m.From == 1 {
			rejects++
		}
	}
	// The hint skips the whole stale term at once.
	if rejects > 2 {
		t.Fatalf("%d rejections to back up over one stale term", rejects)
	}
	for _, d := range n.sm[1].data() {
		if d != "kept" {
			t.Fatalf("node 1 applied %q", d)
		}
	}
}

func TestFastBacktrackManyTerms(t *testing.T) {
	// Follower log: terms 1 1 2 2 2 2 2 2 (stale terms), leader: 1 1 3 3 3 ...
	cfg := testConfig(2, []ID{1, 2})
	r, err := newRaft(cfg, storageWith(1, 1, 2, 2, 2, 2, 2, 2))
	if err != nil {
		t.Fatal(err)
	}
	r.becomeFollower(3, 1)
	r.step(Message{Type: MsgApp, From: 1, To: 2, Term: 3, Index: 12, LogTerm: 3})
	m := r.msgs[0]
	if !m.Reject || m.RejectHint != 8 || m.LogTerm != 2 {
		t.Fatalf("reject %s", m)
	}
	// The leader maps (8, term 2) to the last index of its log with term <= 2.
	lr, _ := newRaft(testConfig(1, []ID{1, 2}), storageWith(1, 1, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3))
	hint, _ := lr.log.findConflictByTerm(m.RejectHint, m.LogTerm)
	if hint != 2 {
		t.Fatalf("leader hint %d, want 2", hint)
	}
}

func TestStaleAppendDoesNotTruncate(t *testing.T) {
	cfg := testConfig(2, []ID{1, 2})
	r, _ := newRaft(cfg, NewMemoryStorage()) // bootstrap: entries 1 and 2 committed
	r.becomeFollower(2, 1)
	first := Message{Type: MsgApp, From: 1, To: 2, Term: 2, Index: 2, LogTerm: 1, Entries: []Entry{{Index: 3, Term: 2}}}
	second := Message{Type: MsgApp, From: 1, To: 2, Term: 2, Index: 3, LogTerm: 2, Entries: []Entry{{Index: 4, Term: 2}, {Index: 5, Term: 2}}}
	r.step(first)
	r.step(second)
	r.step(first) // duplicate, delivered late
	if r.log.lastIndex() != 5 {
		t.Fatalf("stale append truncated the log to %d", r.log.lastIndex())
	}
	if last := r.msgs[len(r.msgs)-1]; last.Reject || last.Index != 3 {
		t.Fatalf("response to stale append: %s", last)
	}
}

func TestCommitOnlyCurrentTermByCounting(t *testing.T) {
	// Leader at term 3 whose log holds an entry of term 2 at index 2.
	cfg := testConfig(1, []ID{1, 2, 3})
	r, _ := newRaft(cfg, storageWith(1, 2))
	r.term = 2
	r.becomeCandidate()
	r.becomeLeader() // term 3, no-op at index 3
	persistAll(r)
	r.msgs = nil
	r.step(Message{Type: MsgAppResp, From: 2, To: 1, Term: 3, Index: 2})
	if r.log.committed != 0 {
		t.Fatalf("committed %d: an old-term entry was committed by counting", r.log.committed)
	}
	r.step(Message{Type: MsgAppResp, From: 2, To: 1, Term: 3, Index: 3})
	if r.log.committed != 3 {
		t.Fatalf("committed %d, want 3 (the no-op commits everything before it)", r.log.committed)
	}
}

// TestFigure8 replays Figure 8 of the Raft paper: an entry from an earlier
// term that sits on a majority is not committed, and may be overwritten,
// until an entry of the leader's own term commits above it. The five
// bootstrap entries (1..5, term 1) come first; the paper's index 2 is our 7.
func TestFigure8(t *testing.T) {
	const x = 7 // the contested index
	setup := func(t *testing.T) *testNet {
		// Classic Raft (no pre-vote, no leases) so that crashes are simple
		// isolations; one entry per append so deliveries can be picked.
		n := newTestNet(t, func(c *Config) { c.PreVote, c.CheckQuorum, c.MaxBatchBytes = false, false, 1 }, 1, 2, 3, 4, 5)
		n.elect(1) // term 2, no-op at 6 committed everywhere
		n.tick(1)
		// (a) S1 replicates index 7 (term 2) to S2 only.
		n.isolate(1)
		n.cut[[2]ID{1, 2}], n.cut[[2]ID{2, 1}] = false, false
		n.propose(1, "x")
		// (b) S1 crashes; S5 wins term 3 with S3, S4 and appends index 7 locally.
		n.heal()
		n.down[1] = true
		n.drop = func(m Message) bool { return m.From == 5 && m.Type == MsgApp }
		n.elect(5)
		if got := n.logTerms(5); !slices.Equal(got, []uint64{1, 1, 1, 1, 1, 2, 3}) {
			t.Fatalf("S5 log %v", got)
		}
		// (c) S5 crashes; S1 restarts and wins term 4 with S2, S3, and
		// copies index 7 (term 2) to S3 — but not its own term-4 no-op.
		n.down[5] = true
		n.drop = nil
		n.restart(1)
		n.edit = func(m *Message) {
			if m.From == 1 && m.Type == MsgApp {
				m.Entries = slices.DeleteFunc(slices.Clone(m.Entries), func(e Entry) bool { return e.Index > x })
			}
		}
		for k := 0; n.raft(1).role != Leader; k++ {
			if k > 5 {
				t.Fatalf("S1 cannot win: %s term %d", n.raft(1).role, n.raft(1).term)
			}
			n.node(1).Campaign()
			n.settle()
		}
		if tt, _ := n.raft(3).log.term(x); n.raft(1).term != 4 || tt != 2 {
			t.Fatalf("S1 term %d, S3 log %v", n.raft(1).term, n.logTerms(3))
		}
		if c := n.raft(1).log.committed; c >= x {
			t.Fatalf("index %d (term 2) committed at %d while on a majority: Figure 8 violation", x, c)
		}
		return n
	}

	t.Run("d: old-term entry is overwritten", func(t *testing.T) {
		n := setup(t)
		n.down[1] = true
		n.edit = nil
		n.restart(5)
		for k := 0; n.raft(5).role != Leader; k++ {
			if k > 5 {
				t.Fatalf("S5 cannot win: %s term %d", n.raft(5).role, n.raft(5).term)
			}
			n.node(5).Campaign()
			n.settle()
		}
		n.tick(2)
		for _, id := range []ID{2, 3, 4, 5} {
			if tt, _ := n.raft(id).log.term(x); tt != 3 {
				t.Errorf("S%d index %d has term %d, want S5's term 3", id, x, tt)
			}
			for _, e := range n.sm[id].applied {
				if e.Index == x && e.Term == 2 {
					t.Errorf("S%d applied the overwritten entry", id)
				}
			}
		}
	})

	t.Run("e: own-term entry commits the old one", func(t *testing.T) {
		n := setup(t)
		n.edit = nil
		n.tick(1)
		if c := n.raft(1).log.committed; c <= x {
			t.Fatalf("commit %d after the no-op reached a majority", c)
		}
		n.down[1] = true
		n.restart(5)
		for range 5 {
			n.node(5).Campaign()
			n.settle()
			if n.raft(5).role == Leader {
				t.Fatalf("S5 won although index %d (term 2) is committed", x)
			}
		}
		if got := n.sm[1].data(); !slices.Equal(got, []string{"x"}) {
			t.Fatalf("S1 applied %v", got)
		}
	})
}

func TestMaxUncommittedBytes(t *testing.T) {
	n := newTestNet(t, func(c *Config) { c.MaxUncommittedBytes = 200 }, 1, 2, 3)
	n.elect(1)
	n.isolate(1)
	var err error
	accepted := 0
	for range 20 {
		if err = n.node(1).Propose(make([]byte, 50)); err != nil {
			break
		}
		accepted++
	}
	if !errors.Is(err, ErrProposalDropped) || accepted == 0 || accepted > 3 {
		t.Fatalf("accepted %d, then %v", accepted, err)
	}
	n.heal()
	n.tick(3)
	if err := n.node(1).Propose(make([]byte, 50)); err != nil {
		t.Fatalf("after the backlog applied: %v", err)
	}
}

func TestLostAppendsRecoveredByHeartbeat(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	n.tick(1)
	n.drop = func(m Message) bool { return m.Type == MsgApp && m.To == 3 }
	n.propose(1, "a", "b")
	n.drop = nil
	n.tick(3)
	if got := n.sm[3].data(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("node 3 applied %v", got)
	}
}

// BenchmarkReplicate3 measures the core alone: a 3-node group in memory,
// proposals of 128 bytes in batches of 64 between Readys.
func BenchmarkReplicate3(b *testing.B) {
	n := newTestNet(b, nil, 1, 2, 3)
	n.elect(1)
	data := make([]byte, 128)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := n.node(1).Propose(data); err != nil {
			b.Fatal(err)
		}
		if i%64 == 63 {
			n.settle()
			for _, id := range n.ids {
				n.sm[id].applied = n.sm[id].applied[:0]
			}
		}
	}
	n.settle()
}
