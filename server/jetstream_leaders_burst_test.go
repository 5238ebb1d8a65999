package server

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// A follower tells the leader map only of a leader or term it did not
// tell it before: after a kill -9 every group of the dead server's
// streams changes its soft state several times (leader forgotten,
// pre-candidate, candidate, new term, new leader) at once on each
// survivor, and each change took the map's lock (issue 20).
func TestSupersedeMemoSkipsRepeats(t *testing.T) {
	var m supersedeMemo
	steps := []struct {
		st   raft.SoftState
		tell bool
	}{
		{raft.SoftState{Lead: 3, Term: 4}, true},
		{raft.SoftState{Lead: raft.None, Term: 4}, true}, // its server died
		{raft.SoftState{Lead: raft.None, Term: 4, Role: raft.PreCandidate}, false},
		{raft.SoftState{Lead: raft.None, Term: 4}, false},
		{raft.SoftState{Lead: raft.None, Term: 5}, true}, // voted in a new term
		{raft.SoftState{Lead: 2, Term: 5}, true},
		{raft.SoftState{Lead: 2, Term: 5}, false},
	}
	for i, s := range steps {
		if got := m.newer(s.st); got != s.tell {
			t.Fatalf("step %d (%+v): told %v, want %v", i, s.st, got, s.tell)
		}
	}
}

// getEach answers what get answers for each key.
func TestLeaderMapGetEach(t *testing.T) {
	lm := newLeaderMap()
	now := time.Now()
	lm.set("A s1", "n1", 2, now)
	lm.set("A s2", "n2", 3, now.Add(-2*leaderForgetAfter)) // not heard from lately
	lm.hold("A s3", "n3", 1, now.Add(-2*leaderForgetAfter))
	lm.set("A s4", "n1", 1, now)
	lm.resign("A s4", "n1", 1)
	keys := []string{"A s1", "A s2", "A s3", "A s4", "A s5"}
	got := lm.getEach(keys, now)
	for i, k := range keys {
		if want := lm.get(k, now); got[i] != want {
			t.Fatalf("getEach %q = %q, get %q", k, got[i], want)
		}
	}
	if got[0] != "n1" || got[1] != "" || got[2] != "n3" || got[3] != "" || got[4] != "" {
		t.Fatalf("getEach = %q", got)
	}
}
