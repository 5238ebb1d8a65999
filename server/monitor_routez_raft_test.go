package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// routeOut is what s's /routez counts sent on its route to name.
func routeOut(t *testing.T, s *Server, name string) *RouteInfo {
	t.Helper()
	for _, r := range s.routez().Routes {
		if r.RemoteName == name {
			return r
		}
	}
	t.Fatalf("%s has no route to %s", s.Name(), name)
	return nil
}

// TestMonitorRoutezRaftCounts: /routez counts per route the raft records
// queued on it, the frames that carried them and its socket writes
// (scripts/stream-trickle reads them per server pair): n heartbeats sent
// together to the peer count as n records or more (the meta group sends
// too) in fewer frames, and at least one write.
func TestMonitorRoutezRaftCounts(t *testing.T) {
	c := runJSCluster(t, 2)
	s1, s2 := c.servers[0], c.servers[1]
	from, to := raftID(s1.Name()), raftID(s2.Name())
	before := *routeOut(t, s1, s2.Name())
	const n = 50
	msgs := make([]raft.Message, n)
	for i := range msgs {
		msgs[i] = raft.Message{Type: raft.MsgHeartbeat, From: from, To: to, Term: 1}
	}
	got0 := s2.raft.notRunning.Load()
	(&raftTransport{s: s1, group: "R0"}).Send(msgs)
	waitFor(t, 10*time.Second, "every heartbeat at the peer", func() bool { return s2.raft.notRunning.Load()-got0 >= n })
	after := routeOut(t, s1, s2.Name())
	recs, frames, writes := after.RaftRecordsOut-before.RaftRecordsOut, after.RaftFramesOut-before.RaftFramesOut,
		after.Writes-before.Writes
	t.Logf("%d records in %d frames, %d writes", recs, frames, writes)
	if recs < n || frames == 0 || frames >= recs || writes == 0 {
		t.Fatalf("/routez of %s to %s: %s", s1.Name(), s2.Name(), fmt.Sprintf("%d records, %d frames, %d writes", recs, frames, writes))
	}
}
