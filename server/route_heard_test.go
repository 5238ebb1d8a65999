package server

import (
	"testing"
	"time"
)

// Anything a peer sends on its route shows it alive (node liveness,
// raft_live.go), not only its PINGs and PONGs: those queue behind its
// raft traffic, and a server restarted among 10,000 streams woke every
// group's leader, whose heartbeats held the PONGs back past
// raftLiveTimeout; a survivor then took the other survivor, sending all
// along, for dead, and thousands of its quiet followers forgot their
// leader and campaigned (issue 20).
func TestRouteTrafficCountsAsHeard(t *testing.T) {
	s := runServer(t, clusterOptions())
	rc := dialRawRoute(t, s, "P")
	routes := s.routeList()
	if len(routes) != 1 {
		t.Fatalf("%d routes", len(routes))
	}
	r := routes[0]
	before := r.heard.Load()
	rc.send("RS+ $G foo\r\n") // no PING, and the server's PINGs go unanswered
	waitFor(t, 5*time.Second, "the peer heard from", func() bool { return r.heard.Load() > before })
}
