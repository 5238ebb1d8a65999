package server

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// injectRouted feeds data to s as if a peer's route had sent it, through
// the route read loop, and returns once all of it is read.
func injectRouted(s *Server, data string) {
	a, b := net.Pipe()
	defer b.Close()
	r := &route{br: bufio.NewReaderSize(strings.NewReader(data), 64*1024), remote: routeInfo{ID: "INJECT", Name: "INJECT", Proto: routeProto}}
	r.c = newClient(s, a, s.cidGen.Add(1))
	r.c.route = r
	_ = s.routeReadLoop(r)
	r.c.closeNow(RouteRemoved)
}

// routeInterest reports whether s knows a peer's interest in subject.
func routeInterest(s *Server, subject string) bool {
	for _, sub := range matchSubject(s.globalAccount(), subject).Plain {
		if sub.route != nil {
			return true
		}
	}
	return false
}

// A publish routed to a server that does not serve its stream (the
// leader moved while it was in flight) is routed once more, to the server
// that does, stored and acknowledged; a copy that was re-routed already
// (mode 2) is answered 503 (not stored), and a routed message for no
// stream's subject neither. The route layer only hands such messages on
// (route_hooks.go); JetStream decides (jetstream_routes.go).
func TestJetStreamClusterRoutedPublishFollowsLeader(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "RR", Subjects: []string{"rr.>"}, Replicas: 3})
	var leader, follower *Server
	var lset *stream
	waitFor(t, 10*time.Second, "a stream leader whose interest a follower knows", func() bool {
		leader, follower, lset = nil, nil, nil
		for _, m := range c.replicas("RR") {
			if m.isLeader() {
				lset = m
			}
		}
		if lset == nil {
			return false
		}
		for _, s := range c.servers {
			if s.js.Load().account(globalAccountName).lookup("RR") == lset {
				leader = s
			} else if follower == nil && routeInterest(s, "rr.x") {
				follower = s
			}
		}
		return leader != nil && follower != nil
	})
	r := protoDial(t, follower, `{"verbose":false,"headers":true}`)
	r.send("SUB _INBOX.rr.> 1\r\n")
	protoFlush(r)
	waitFor(t, 5*time.Second, "the leader knows the reply interest", func() bool { return routeInterest(leader, "_INBOX.rr.1") })

	injectRouted(follower, "RMSG $G rr.x _INBOX.rr.1 1 - 0 5\r\nhello\r\n")
	r.expect("MSG _INBOX.rr.1 1 23\r\n{\"stream\":\"RR\",\"seq\":1}\r\n")

	// Not a stream's subject: no answer; then a re-routed copy: 503 (not
	// stored). The follower handles both in order on this read loop, so
	// the first thing to arrive is the 503.
	injectRouted(follower, "RMSG $G other.x _INBOX.rr.2 1 - 0 5\r\nhello\r\nRMSG $G rr.y _INBOX.rr.3 2 - 0 5\r\nhello\r\n")
	r.expect("HMSG _INBOX.rr.3 1 36 36\r\nNATS/1.0 503\r\nNats-Subject: rr.y\r\n\r\n\r\n")
	protoFlush(r)
	var st StreamState
	lset.st().FastState(&st)
	if st.Msgs != 1 || st.LastSeq != 1 {
		t.Fatalf("leader stores %d messages, last %d; want only the re-routed one", st.Msgs, st.LastSeq)
	}
}
