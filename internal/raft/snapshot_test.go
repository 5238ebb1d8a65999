package raft

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// compact snapshots node id at its applied index, with the applied payloads
// as the "state".
func (n *testNet) compact(id ID) {
	n.t.Helper()
	applied := n.raft(id).log.applied
	if err := n.drv[id].Compact(applied, []byte(fmt.Sprint(n.sm[id].data()))); err != nil {
		n.t.Fatalf("compact %d at %d: %v", id, applied, err)
	}
}

func TestSnapshotSentToLaggingFollower(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	n.isolate(3)
	n.propose(1, "a", "b", "c")
	n.tick(1)
	n.compact(1)
	n.propose(1, "d")
	if first := n.raft(1).log.firstIndex(); first <= 2 {
		t.Fatalf("leader did not compact: first index %d", first)
	}
	n.heal()
	n.sent = nil
	n.tick(3)
	snaps := 0
	for _, m := range n.sent {
		if m.Type == MsgSnap {
			snaps++
			if m.To != 3 {
				t.Errorf("snapshot sent to %d", m.To)
			}
		}
	}
	if snaps != 1 {
		t.Fatalf("%d snapshots sent", snaps)
	}
	if s := n.sm[3].snap; s == nil || string(s.Data) != "[a b c]" || !slices.Equal(s.Peers, []ID{1, 2, 3}) {
		t.Fatalf("follower restored %+v", s)
	}
	if got := n.sm[3].data(); !slices.Equal(got, []string{"d"}) {
		t.Fatalf("follower applied %v after the snapshot", got)
	}
	if !slices.Equal(n.logTerms(3), n.logTerms(1)) {
		t.Fatalf("logs differ after install: %v vs %v", n.logTerms(3), n.logTerms(1))
	}
	pr := n.raft(1).ls.prs[3]
	if pr.state != stateReplicate || pr.match != n.raft(1).log.lastIndex() {
		t.Fatalf("progress %+v", pr)
	}
}

func TestLostSnapshotIsResent(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	n.isolate(3)
	n.propose(1, "a", "b")
	n.tick(1)
	n.compact(1)
	n.heal()
	n.drop = func(m Message) bool { return m.Type == MsgSnap }
	n.tick(2)
	if n.raft(1).ls.prs[3].state != stateSnapshot {
		t.Fatalf("state %s", n.raft(1).ls.prs[3].state)
	}
	n.drop = nil
	n.tick(3 * n.cfgs[1].ElectionTicks)
	if n.sm[3].snap == nil {
		t.Fatal("snapshot never re-sent")
	}
}

func TestSnapshotMatchingLogOnlyMovesCommit(t *testing.T) {
	cfg := testConfig(2, []ID{1, 2})
	r, _ := newRaft(cfg, storageWith(1, 1, 1, 1))
	r.becomeFollower(1, 1)
	r.step(Message{Type: MsgSnap, From: 1, To: 2, Term: 1, Snapshot: &Snapshot{Index: 3, Term: 1, Peers: []ID{1, 2}}})
	if r.log.u.snap != nil || r.log.committed != 3 || r.log.lastIndex() != 4 {
		t.Fatalf("snapshot over a matching log: %s last %d", r.log, r.log.lastIndex())
	}
	// An older snapshot than the commit is ignored.
	r.step(Message{Type: MsgSnap, From: 1, To: 2, Term: 1, Snapshot: &Snapshot{Index: 2, Term: 1}})
	if r.log.u.snap != nil {
		t.Fatal("installed an old snapshot")
	}
}

func TestRestartFromSnapshotAndLog(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	n.propose(1, "a", "b")
	n.tick(1)
	n.compact(2)
	n.propose(1, "c")
	n.tick(1)
	hs := n.st[2].HardState()
	n.restart(2)
	r := n.raft(2)
	if r.term != hs.Term || r.vote != hs.Vote || r.log.committed != hs.Commit {
		t.Fatalf("restart lost hard state: %+v vs term %d vote %d commit %d", hs, r.term, r.vote, r.log.committed)
	}
	if s := n.sm[2].snap; s == nil || string(s.Data) != "[a b]" {
		t.Fatalf("state machine not restored from snapshot: %+v", s)
	}
	n.settle()
	if got := n.sm[2].data(); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("replayed %v after the snapshot", got)
	}
}

func TestCompactErrors(t *testing.T) {
	n := newTestNet(t, nil, 1)
	n.elect(1)
	n.propose(1, "a")
	applied := n.raft(1).log.applied
	if _, err := n.node(1).Compact(applied+1, nil); err == nil {
		t.Fatal("compacted beyond applied")
	}
	n.compact(1)
	if _, err := n.node(1).Compact(applied, nil); !errors.Is(err, ErrSnapOutOfDate) {
		t.Fatalf("compacting twice: %v", err)
	}
}
