package raft

import (
	"slices"
	"testing"
)

// A leader counts itself toward a commit only for entries durable here:
// with its own entry handed out but not persisted, one follower's answer
// is not a quorum of three; once it is persisted, it is. (Before, the
// leader counted itself when it appended: one answer committed.)
func TestLeaderCountsItselfOnlyPersisted(t *testing.T) {
	r, _ := newRaft(testConfig(1, []ID{1, 2, 3}), NewMemoryStorage())
	r.becomeCandidate()
	r.becomeLeader()
	persistAll(r)
	r.step(Message{Type: MsgAppResp, From: 2, To: 1, Term: r.term, Index: r.log.lastIndex()})
	if err := r.propose(EntryNormal, []byte("x")); err != nil {
		t.Fatal(err)
	}
	x := r.log.lastIndex()
	handOut(r) // to a driver whose sync runs behind
	r.step(Message{Type: MsgAppResp, From: 2, To: 1, Term: r.term, Index: x})
	if r.log.committed >= x {
		t.Fatalf("committed %d: one follower and a leader whose entry is not durable made a quorum", r.log.committed)
	}
	r.persisted(x, r.term)
	if r.log.committed != x {
		t.Fatalf("committed %d, want %d once the leader's entry is persisted", r.log.committed, x)
	}
	if len(r.log.u.ents) != 0 {
		t.Fatalf("persisted entries still unstable: %s", r.log)
	}
}

// Entries being persisted are not handed again; a deposed leader whose
// in-progress tail is replaced hands the new entries, and the report of
// its old sync changes nothing.
func TestInProgressEntriesReplaced(t *testing.T) {
	r, _ := newRaft(testConfig(1, []ID{1, 2, 3}), NewMemoryStorage())
	r.becomeCandidate()
	r.becomeLeader()
	persistAll(r)
	base, oldTerm := r.log.lastIndex(), r.term
	for _, d := range []string{"a", "b"} {
		if err := r.propose(EntryNormal, []byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	handOut(r)
	if len(r.log.u.unhanded()) != 0 {
		t.Fatalf("entries in progress handed again: %d", len(r.log.u.unhanded()))
	}
	prevTerm, _ := r.log.term(base)
	r.step(Message{Type: MsgApp, From: 2, To: 1, Term: oldTerm + 1, Index: base, LogTerm: prevTerm,
		Entries: []Entry{{Index: base + 1, Term: oldTerm + 1, Data: []byte("c")}}})
	if r.role != Follower {
		t.Fatalf("role %s, want follower", r.role)
	}
	un := r.log.u.unhanded()
	if len(un) != 1 || string(un[0].Data) != "c" {
		t.Fatalf("unhanded %v, want the new entry c", un)
	}
	r.persisted(base+2, oldTerm) // the old sync's report
	if r.log.lastIndex() != base+1 || len(r.log.u.unhanded()) != 1 {
		t.Fatalf("stale report changed the log: %s", r.log)
	}
}

// manualJobs is a SyncBehind whose jobs end when the test says.
type manualJobs struct {
	jobs  []*manualJob
	waits int
}

type manualJob struct {
	sync  func() error
	ended bool
	m     *manualJobs
}

func (j *manualJob) Done(wait bool) (bool, error) {
	if wait && !j.ended {
		j.m.waits++
		j.ended = true
	}
	if !j.ended {
		return false, nil
	}
	return true, j.sync()
}

func (m *manualJobs) start(sync func() error) SyncJob {
	j := &manualJob{sync: sync, m: m}
	m.jobs = append(m.jobs, j)
	return j
}

// deliver steps the queued messages for id into its node.
func (n *testNet) deliver(id ID) {
	n.t.Helper()
	var rest []Message
	for _, m := range n.q {
		if m.To != id {
			rest = append(rest, m)
			continue
		}
		if err := n.node(id).Step(m); err != nil {
			n.t.Fatal(err)
		}
	}
	n.q = rest
}

func (n *testNet) processOne(id ID) {
	n.t.Helper()
	if err := n.drv[id].ProcessAll(); err != nil {
		n.t.Fatal(err)
	}
}

// A leader whose own sync runs behind commits and applies an entry the
// two followers made durable, its own sync still running; it hands the
// entry out once. When its sync ends, it counts itself again.
func TestDriverLeaderCommitsBehindItsSync(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	jobs := &manualJobs{}
	n.drv[1].SyncBehind = jobs.start
	var sent []Entry
	n.drv[1].Observe = func(rd *Ready) {
		if len(rd.Entries) > 0 {
			sent = append(sent, rd.Entries...)
		}
	}
	if err := n.node(1).Propose([]byte("x")); err != nil {
		t.Fatal(err)
	}
	n.processOne(1)
	if len(jobs.jobs) != 1 || !n.drv[1].SyncPending() {
		t.Fatalf("%d sync jobs, pending %v: want one running", len(jobs.jobs), n.drv[1].SyncPending())
	}
	x := n.raft(1).log.lastIndex()
	for _, id := range []ID{2, 3} {
		n.deliver(id)
		n.processOne(id)
	}
	n.deliver(1)
	n.processOne(1)
	if c := n.raft(1).log.committed; c != x {
		t.Fatalf("leader committed %d, want %d from the followers' answers", c, x)
	}
	if got := n.sm[1].data(); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("leader applied %v, want [x]", got)
	}
	if len(sent) != 1 {
		t.Fatalf("leader handed out %d entries, want 1 (no re-handing while in progress)", len(sent))
	}
	if !n.drv[1].SyncPending() || n.raft(1).ls.prs[1].match >= x {
		t.Fatalf("leader counted itself before its sync ended (match %d)", n.raft(1).ls.prs[1].match)
	}
	jobs.jobs[0].ended = true
	n.processOne(1)
	if n.drv[1].SyncPending() || n.raft(1).ls.prs[1].match != x {
		t.Fatalf("after the sync: pending %v, self match %d, want %d", n.drv[1].SyncPending(), n.raft(1).ls.prs[1].match, x)
	}
	if jobs.waits != 0 {
		t.Fatalf("the driver waited for the sync %d times", jobs.waits)
	}
}

// A leader that steps down waits for its sync behind before it sends
// anything that promises durability (here: the answer to the new
// leader's append of the entries it holds).
func TestDriverCatchesUpBeforeFollowing(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	jobs := &manualJobs{}
	n.drv[1].SyncBehind = jobs.start
	if err := n.node(1).Propose([]byte("x")); err != nil {
		t.Fatal(err)
	}
	n.processOne(1)
	n.q = nil // the appends are lost
	if !n.drv[1].SyncPending() {
		t.Fatal("no sync behind")
	}
	r := n.raft(1)
	r.step(Message{Type: MsgHeartbeat, From: 2, To: 1, Term: r.term + 1})
	n.processOne(1)
	if jobs.waits != 1 || n.drv[1].SyncPending() {
		t.Fatalf("waits %d, pending %v: the follower did not wait for its sync", jobs.waits, n.drv[1].SyncPending())
	}
	if len(n.q) == 0 {
		t.Fatal("no answer sent")
	}
}
