package server

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/clock"
	"github.com/nats-io/nats-server/v2/internal/raft"
)

// firstSM is a countingSM whose replica is its group's first leader.
type firstSM struct{ countingSM }

func (*firstSM) campaignsFirst() bool { return true }

// A new group's first leader campaigns as its group starts; its vote
// request reaches a server that has not started the group yet, which keeps
// it and hands it to the group as it starts, so a leader is elected at
// once. The raft clock here never ticks (a manual clock): a vote request
// dropped would never be followed by another campaign.
func TestRaftEarlyVoteKeptUntilGroupStarts(t *testing.T) {
	servers := runCluster(t, 3, func(_ int, o *Options) { o.clock = clock.NewManual(time.Now()) })
	var peers []raft.ID
	for _, s := range servers {
		peers = append(peers, raftID(s.Name()))
	}
	first := &firstSM{}
	if _, err := servers[0].startRaftGroup("E", peers, raft.NewMemoryStorage(), first); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the vote request kept on server 1", func() bool {
		servers[1].raft.mu.Lock()
		defer servers[1].raft.mu.Unlock()
		return len(servers[1].raft.early.msgs) > 0
	})
	if _, err := servers[1].startRaftGroup("E", peers, raft.NewMemoryStorage(), &countingSM{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the first leader elected", func() bool {
		_, st := first.snapshot()
		return st.Role == raft.Leader && st.LeaderReady
	})
	servers[1].raft.mu.Lock()
	left := len(servers[1].raft.early.msgs)
	servers[1].raft.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d messages still kept after the group started", left)
	}
}

// Kept messages are bounded in number, size and age.
func TestRaftEarlyMailBounds(t *testing.T) {
	t0 := time.Now()
	var e earlyMail
	for i := range earlyMailMax + 10 {
		if e.room(100, t0) {
			e.keep("G", raft.Message{Index: uint64(i)}, 100, t0)
		}
	}
	if len(e.msgs) != earlyMailMax {
		t.Fatalf("%d kept, bound %d", len(e.msgs), earlyMailMax)
	}
	if e.room(100, t0.Add(earlyMailFor)) {
		t.Fatal("room while full")
	}
	if !e.room(100, t0.Add(earlyMailFor+time.Millisecond)) || len(e.msgs) != 0 || e.bytes != 0 {
		t.Fatalf("%d messages, %d bytes after they expired", len(e.msgs), e.bytes)
	}
	if e.room(earlyMailMsgMax+1, t0) {
		t.Fatal("room for a message above the size bound")
	}
	e.keep("A", raft.Message{Index: 1}, 10, t0)
	e.keep("B", raft.Message{Index: 2}, 10, t0)
	e.keep("A", raft.Message{Index: 3}, 10, t0)
	got := e.take("A")
	if len(got) != 2 || got[0].Index != 1 || got[1].Index != 3 || len(e.msgs) != 1 || e.bytes != 10 {
		t.Fatalf("took %v, left %d (%d bytes)", got, len(e.msgs), e.bytes)
	}
}
