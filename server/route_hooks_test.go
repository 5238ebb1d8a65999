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
func injectRouted(s *Server, data string) { injectRoutedProto(s, routeProto, data) }

// injectRoutedProto is injectRouted from a peer that speaks route
// protocol proto.
func injectRoutedProto(s *Server, proto int, data string) {
	a, b := net.Pipe()
	defer b.Close()
	r := &route{br: bufio.NewReaderSize(strings.NewReader(data), 64*1024), remote: routeInfo{ID: "INJECT", Name: "INJECT", Proto: proto}}
	r.c = newClient(s, a, s.cidGen.Add(1))
	r.c.route = r
	_ = s.routeReadLoop(r)
	r.c.closeNow(RouteRemoved)
}

// routeInterest reports whether s knows a peer's interest in subject,
// plain or as a queue group.
func routeInterest(s *Server, subject string) bool { return routeInterests(s, subject) > 0 }

// routeInterests counts the peers' subscriptions s knows for subject.
func routeInterests(s *Server, subject string) int {
	res := matchSubject(s.globalAccount(), subject)
	n := 0
	for _, sub := range res.Plain {
		if sub.route != nil {
			n++
		}
	}
	for _, q := range res.Queues {
		for _, sub := range q.Members {
			if sub.route != nil {
				n++
			}
		}
	}
	return n
}

// A stream publish routed to a server that does not serve its stream (the
// leader moved while it was in flight) is routed once more, to the server
// that does, stored and acknowledged; a copy that was re-routed already
// (mode 3) is answered 503 (not stored), unless a peer older than route
// protocol 7 has plain interest in the subject (its leader may have had a
// copy of its own); a plain copy, or one for no stream's subject, is not
// answered. The route layer only hands such messages on (route_hooks.go);
// JetStream decides (jetstream_routes.go).
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

	injectRouted(follower, "RMSG $G rr.x _INBOX.rr.1 0 "+streamIngestQueue+" 0 5\r\nhello\r\n")
	r.expect("MSG _INBOX.rr.1 1 23\r\n{\"stream\":\"RR\",\"seq\":1}\r\n")

	// Not a stream's subject, a plain copy, and a re-routed copy while an
	// older peer has plain interest: no answer; then a re-routed copy:
	// 503 (not stored). The follower handles them in order on one read
	// loop each, so the first thing to arrive is the 503.
	injectRouted(follower, "RMSG $G other.x _INBOX.rr.2 0 "+streamIngestQueue+" 0 5\r\nhello\r\n"+
		"RMSG $G rr.y _INBOX.rr.3 1 - 0 5\r\nhello\r\n")
	injectRoutedProto(follower, routeProtoQueueReroute-1, "RS+ $G rr.>\r\n"+
		"RMSG $G rr.y _INBOX.rr.4 3 "+streamIngestQueue+" 0 5\r\nhello\r\nRS- $G rr.>\r\n")
	injectRouted(follower, "RMSG $G rr.y _INBOX.rr.5 3 "+streamIngestQueue+" 0 5\r\nhello\r\n")
	r.expect("HMSG _INBOX.rr.5 1 36 36\r\nNATS/1.0 503\r\nNats-Subject: rr.y\r\n\r\n\r\n")
	protoFlush(r)
	var st StreamState
	lset.st().FastState(&st)
	if st.Msgs != 1 || st.LastSeq != 1 {
		t.Fatalf("leader stores %d messages, last %d; want only the re-routed one", st.Msgs, st.LastSeq)
	}
}
