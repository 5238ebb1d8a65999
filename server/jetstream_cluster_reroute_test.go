package server

import (
	"bytes"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ingestQueueOf is the queue group of the stream leader's local
// subscription to subject on s ("" for a plain one; ok false: none).
func ingestQueueOf(s *Server, subject string) (string, bool) {
	for _, e := range s.globalAccount().sl.All() {
		if e.Subject == subject && e.Value.route == nil && e.Value.icb != nil {
			return e.Queue, true
		}
	}
	return "", false
}

// routeTo is s's route to the server peer.
func routeTo(s, peer *Server) *route {
	s.routes.mu.Lock()
	defer s.routes.mu.Unlock()
	return s.routes.byID[peer.id]
}

// countMsgs counts the messages a subscription receives.
func countMsgs(t *testing.T, nc *nats.Conn, subject, queue string) *atomic.Int64 {
	var n atomic.Int64
	if _, err := nc.QueueSubscribe(subject, queue, func(*nats.Msg) { n.Add(1) }); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return &n
}

// TestJetStreamClusterRerouteDoubleInterestStoresOnce makes the window of
// a leader change last: the publishers' server knows the stream leader's
// interest and, from a follower, the same interest again, as it does for
// a moment when the new leader's RS+ arrives before the old one's RS-.
// Every publish must be stored once and acknowledged (a copy that reaches
// the follower goes on to the leader), and core subscribers of the same
// subjects must get each message once, first with core subscribers on the
// leader and the publishers' server, then on the follower too. Before, the
// leader subscribed plainly: both got a copy and the follower re-routed
// its copy to the leader, storing every publish twice (or, with a core
// subscriber of its own, dropped it).
func TestJetStreamClusterRerouteDoubleInterestStoresOnce(t *testing.T) {
	checkDoubleInterest(t, runJSCluster(t, 3))
}

// The same between servers that announce route protocol 6: re-routed
// copies go in mode 0 (an older server knows no mode 3), and still reach
// the leader once.
func TestJetStreamClusterRerouteDoubleInterestOlderPeers(t *testing.T) {
	checkDoubleInterest(t, runJSClusterWith(t, 3, func(_ int, o *Options) { o.routeProto = routeProtoQueueReroute - 1 }))
}

func checkDoubleInterest(t *testing.T, c *jsTestCluster) {
	_, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "DI", Subjects: []string{"di.>"}, Replicas: 3})
	var leader *Server
	waitFor(t, 10*time.Second, "the stream's leader", func() bool {
		for i, m := range c.replicas("DI") {
			if m.isLeader() {
				leader = c.servers[i]
				return true
			}
		}
		return false
	})
	var pubSrv, stale *Server
	for _, s := range c.servers {
		switch {
		case s == leader:
		case pubSrv == nil:
			pubSrv = s
		default:
			stale = s
		}
	}
	queue, ok := ingestQueueOf(leader, "di.>")
	if !ok {
		t.Fatal("the leader does not subscribe di.>")
	}
	waitFor(t, 5*time.Second, "the leader's interest known everywhere", func() bool {
		return routeInterest(pubSrv, "di.x") && routeInterest(stale, "di.x")
	})
	nc, pjs := jsClient(t, pubSrv)
	ncL := connectNATS(t, leader.ClientURL())
	core := []*atomic.Int64{countMsgs(t, ncL, "di.*", ""), countMsgs(t, ncL, "di.*", "cq"), countMsgs(t, nc, "di.*", "cq")}
	subConns := []*nats.Conn{ncL, nc}
	waitFor(t, 5*time.Second, "the core interest known", func() bool { return routeInterests(pubSrv, "di.x") == 3 })

	// The stale server tells the publishers' server it serves the stream
	// too, with the leader's own interest line.
	r := routeTo(stale, pubSrv)
	if r == nil {
		t.Fatal("no route")
	}
	r.c.queueProto(interestProto("RS+", globalAccountName, "di.>", queue))
	waitFor(t, 5*time.Second, "two leaders' interest", func() bool { return routeInterests(pubSrv, "di.x") == 4 })

	st, err := js.Stream(ctx(t), "DI")
	if err != nil {
		t.Fatal(err)
	}
	const acked, fired = 40, 40
	round := func(n int) {
		t.Helper()
		for i := range acked {
			if _, err := pjs.Publish(ctx(t), "di.x", fmt.Appendf(nil, "a%d-%d", n, i)); err != nil {
				t.Fatalf("round %d, publish %d: %v", n, i, err)
			}
		}
		for i := range fired { // no reply: a copy that reaches the stale server is not lost either
			if err := nc.Publish("di.y", fmt.Appendf(nil, "f%d-%d", n, i)); err != nil {
				t.Fatal(err)
			}
		}
		want := uint64(n * (acked + fired))
		waitFor(t, 10*time.Second, "every publish stored", func() bool {
			info, err := st.Info(ctx(t))
			return err == nil && info.State.Msgs >= want
		})
		seen := map[string]uint64{}
		info, _ := st.Info(ctx(t))
		for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
			m, err := st.GetMsg(ctx(t), seq)
			if err != nil {
				t.Fatalf("message %d: %v", seq, err)
			}
			if first, dup := seen[string(m.Data)]; dup {
				t.Errorf("%s stored at %d and %d", m.Data, first, seq)
			}
			seen[string(m.Data)] = seq
		}
		if uint64(len(seen)) != want || info.State.Msgs != want {
			t.Fatalf("round %d: %d messages stored, %d distinct; want %d", n, info.State.Msgs, len(seen), want)
		}
	}
	// checkCore: each plain subscriber got want messages, and the queue
	// group's members want between them.
	checkCore := func(plain []func() int64, group func() int64, want int64) {
		t.Helper()
		waitFor(t, 5*time.Second, "the core deliveries", func() bool {
			for _, p := range plain {
				if p() < want {
					return false
				}
			}
			return group() >= want
		})
		for _, c := range subConns {
			if err := c.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range plain {
			if p() != want {
				t.Errorf("a plain core subscriber got %d messages, want %d", p(), want)
			}
		}
		if g := group(); g != want {
			t.Errorf("the core queue group got %d messages, want %d", g, want)
		}
	}

	round(1)
	plainL, grpL, grpP := core[0], core[1], core[2]
	checkCore([]func() int64{plainL.Load}, func() int64 { return grpL.Load() + grpP.Load() }, acked+fired)

	// Core subscribers on the stale server as well: it delivers its plain
	// copy and sends the stream's copy on without delivering it again.
	ncS := connectNATS(t, stale.ClientURL())
	plainS, grpS := countMsgs(t, ncS, "di.*", ""), countMsgs(t, ncS, "di.*", "cq")
	subConns = append(subConns, ncS)
	waitFor(t, 5*time.Second, "the stale server's core interest known", func() bool { return routeInterests(pubSrv, "di.x") == 6 })
	baseL, baseG := plainL.Load(), grpL.Load()+grpP.Load()
	round(2)
	checkCore([]func() int64{func() int64 { return plainL.Load() - baseL }, plainS.Load},
		func() int64 { return grpL.Load() + grpP.Load() + grpS.Load() - baseG }, acked+fired)
}

// A queue group's copy that finds no member here goes on to a member on
// another route once: in mode 3 to a peer that speaks route protocol 7,
// in mode 0 to an older one (which at that version never re-routes mode 0
// and would close the route on an unknown mode); a copy re-routed already
// (mode 3) goes nowhere.
func TestRouteQueueRerouteMode(t *testing.T) {
	s := runServer(t, testOptions())
	acc := s.globalAccount()
	for _, tc := range []struct {
		proto int
		mode  byte
		want  string
	}{
		{routeProto, '0', "RMSG $G q.x _INBOX.r 3 g 0 2\r\nhi"},
		{routeProto, '1', "RMSG $G q.x _INBOX.r 3 g 0 2\r\nhi"},
		{routeProtoQueueReroute - 1, '0', "RMSG $G q.x _INBOX.r 0 g 0 2\r\nhi"},
		{routeProto, '3', ""},
	} {
		a, b := net.Pipe()
		peer := &route{remote: routeInfo{ID: "P", Name: "P", Proto: tc.proto}}
		peer.c = newClient(s, a, s.cidGen.Add(1))
		peer.c.route = peer
		sub := &subscription{route: peer.c, subject: "q.>", queue: "g", sid: "route"}
		if err := acc.insertSub(sub); err != nil {
			t.Fatal(err)
		}
		s.deliverRouted(nil, acc, "q.x", "_INBOX.r", tc.mode, []string{"g"}, nil, []byte("hi"))
		chunks, _ := peer.c.out.take()
		if got := string(bytes.TrimSuffix(bytes.Join(chunks, nil), []byte("\r\n"))); got != tc.want {
			t.Errorf("proto %d, mode %c: sent %q, want %q", tc.proto, tc.mode, got, tc.want)
		}
		_ = acc.sl.Remove(sub.subject, sub.queue, sub)
		peer.c.closeNow(RouteRemoved)
		b.Close()
	}
}
