package server

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// A group's status is made when asked, on the group goroutine: a leader's
// answer carries every peer's progress and the commit reached; a stopped
// group answers at once with the last status made.
func TestRaftGroupStatusOnDemand(t *testing.T) {
	peers, sms, groups := runMemRaftGroups(t, "S")
	leader := waitLeader(t, sms)
	for i := range 10 {
		groups[leader].Propose([]byte{byte(i)}, nil)
	}
	waitApplied(t, sms, 10)
	st := groups[leader].statusSnapshot()
	if st.ID != peers[leader] || st.Role != raft.Leader || len(st.Progress) != 3 || st.Commit < 10 {
		t.Fatalf("leader status %+v", st)
	}
	waitFor(t, 5*time.Second, "every follower's match at the commit", func() bool {
		st = groups[leader].statusSnapshot()
		for _, pr := range st.Progress {
			if pr.Match < st.Commit {
				return false
			}
		}
		return true
	})
	groups[leader].stop()
	start := time.Now()
	if again := groups[leader].statusSnapshot(); again.Commit != st.Commit || len(again.Progress) != 3 {
		t.Fatalf("stopped group's status %+v, want the last one %+v", again, st)
	}
	if took := time.Since(start); took >= statusWait {
		t.Fatalf("a stopped group's status took %v", took)
	}
}

// Raft finds a peer's route without a lock or an allocation, and of two
// routes to servers of one name (one from before the peer restarted) it
// takes the one registered last.
func TestRouteForPeerTable(t *testing.T) {
	s := &Server{id: "A"}
	s.opts.Store(testOptions())
	s.initRouteTable()
	old := &route{remote: routeInfo{ID: "OLD", Name: "B", Proto: routeProto}}
	other := &route{remote: routeInfo{ID: "C1", Name: "C", Proto: routeProto}}
	for _, r := range []*route{old, other} {
		if err := s.registerRoute(r); err != nil {
			t.Fatal(err)
		}
	}
	if s.routeForPeer(raftID("B")) != old || s.routeForPeer(raftID("C")) != other {
		t.Fatal("peers not mapped to their routes")
	}
	fresh := &route{remote: routeInfo{ID: "NEW", Name: "B", Proto: routeProto}}
	if err := s.registerRoute(fresh); err != nil {
		t.Fatal(err)
	}
	if s.routeForPeer(raftID("B")) != fresh {
		t.Fatal("the route registered last does not win")
	}
	s.routes.mu.Lock()
	delete(s.routes.byID, "NEW")
	s.publishPeers()
	s.routes.mu.Unlock()
	if s.routeForPeer(raftID("B")) != old || s.routeForPeer(raftID("X")) != nil {
		t.Fatal("the table does not follow a removal")
	}
	id := raftID("C")
	if n := testing.AllocsPerRun(100, func() { s.routeForPeer(id) }); n != 0 {
		t.Fatalf("routeForPeer allocates %v times", n)
	}
}
