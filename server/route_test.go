package server

import (
	"errors"
	"fmt"
	"math/rand"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// runCluster starts n in-process servers; each routes only to the first,
// so the rest of the mesh must come from gossip.
func runCluster(t testing.TB, n int, tweak func(i int, o *Options)) []*Server {
	t.Helper()
	var servers []*Server
	var seed *url.URL
	for i := 0; i < n; i++ {
		o := testOptions()
		o.ServerName = fmt.Sprintf("S%d", i+1)
		o.Cluster.Name = "TEST"
		o.Cluster.Host = "127.0.0.1"
		o.Cluster.Port = RANDOM_PORT
		if seed != nil {
			o.Routes = []*url.URL{seed}
		}
		if tweak != nil {
			tweak(i, o)
		}
		s := runServer(t, o)
		if seed == nil {
			seed = &url.URL{Scheme: "nats-route", Host: s.ClusterAddr().String()}
		}
		servers = append(servers, s)
	}
	waitForMesh(t, servers)
	return servers
}

func waitForMesh(t testing.TB, servers []*Server) {
	t.Helper()
	waitFor(t, 10*time.Second, "full mesh", func() bool {
		for _, s := range servers {
			if s.NumRoutes() != len(servers)-1 {
				return false
			}
		}
		return true
	})
}

// waitForInterest waits until every server routes subject somewhere.
func waitForInterest(t testing.TB, servers []*Server, subject string) {
	t.Helper()
	waitFor(t, 5*time.Second, "interest on "+subject, func() bool {
		for _, s := range servers {
			if len(s.globalAccount().sl.Match(subject).Plain) == 0 && len(s.globalAccount().sl.Match(subject).Queues) == 0 {
				return false
			}
		}
		return true
	})
}

func TestRouteMeshAndPubSub(t *testing.T) {
	servers := runCluster(t, 3, nil)
	sub := connectNATS(t, servers[2].ClientURL())
	s, _ := sub.SubscribeSync("across.>")
	sub.Flush()
	waitForInterest(t, servers, "across.x")
	pub := connectNATS(t, servers[0].ClientURL())
	for i := 0; i < 100; i++ {
		pub.Publish("across.x", []byte(fmt.Sprint(i)))
	}
	for i := 0; i < 100; i++ {
		m, err := s.NextMsg(2 * time.Second)
		if err != nil || string(m.Data) != fmt.Sprint(i) {
			t.Fatalf("msg %d: %v %v", i, m, err)
		}
	}
	// Overlapping subscriptions on one remote server still get one copy each.
	s2, _ := sub.SubscribeSync("across.x")
	sub.Flush()
	waitFor(t, 5*time.Second, "second interest", func() bool {
		return len(servers[0].globalAccount().sl.Match("across.x").Plain) == 2
	})
	pub.Publish("across.x", []byte("once"))
	for _, ss := range []*nats.Subscription{s, s2} {
		if m, err := ss.NextMsg(2 * time.Second); err != nil || string(m.Data) != "once" {
			t.Fatalf("%v %v", m, err)
		}
	}
	if m, err := s.NextMsg(100 * time.Millisecond); err == nil {
		t.Fatalf("duplicate delivery %q", m.Data)
	}
}

// Each pair of servers keeps one route; the loser of a duplicate does not
// dial again while the winner lives (it redialled every 50 ms before).
func TestRouteNoRedialWhileDuplicateLives(t *testing.T) {
	servers := runCluster(t, 3, nil)
	attempts := func() (n int64) {
		for _, s := range servers {
			n += s.routes.attempts.Load()
		}
		return n
	}
	before := attempts()
	time.Sleep(time.Second)              // a quiet mesh: nothing may happen meanwhile
	if n := attempts() - before; n > 4 { // a redial in flight costs 2
		t.Fatalf("%d route handshakes in a second on a settled mesh", n)
	}
	// A route that drops is dialled again.
	old := servers[1].routeList()[0]
	old.c.closeNow(RouteRemoved)
	waitFor(t, 10*time.Second, "a new route", func() bool {
		rs := servers[1].routeList()
		return len(rs) == 2 && rs[0] != old && rs[1] != old
	})
	waitForMesh(t, servers)
}

func TestRouteRequestReplyAndNoResponders(t *testing.T) {
	servers := runCluster(t, 3, nil)
	svc := connectNATS(t, servers[1].ClientURL())
	svc.Subscribe("svc", func(m *nats.Msg) { m.Respond(append([]byte("re:"), m.Data...)) })
	svc.Flush()
	waitForInterest(t, servers, "svc")
	nc := connectNATS(t, servers[2].ClientURL())
	for i := 0; i < 20; i++ {
		r, err := nc.Request("svc", []byte("x"), 2*time.Second)
		if err != nil || string(r.Data) != "re:x" {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if _, err := nc.Request("nobody", nil, 2*time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("no responders across the cluster: %v", err)
	}
}

func TestRouteQueueGroups(t *testing.T) {
	servers := runCluster(t, 3, nil)
	var total atomic.Int32
	var per [3]atomic.Int32
	for i, s := range servers {
		nc := connectNATS(t, s.ClientURL())
		nc.QueueSubscribe("q", "workers", func(*nats.Msg) { per[i].Add(1); total.Add(1) })
		nc.Flush()
	}
	waitFor(t, 5*time.Second, "queue interest everywhere", func() bool {
		for _, s := range servers {
			r := s.globalAccount().sl.Match("q")
			if len(r.Queues) != 1 || len(r.Queues[0].Members) != 3 {
				return false
			}
		}
		return true
	})
	// A publisher on a server whose only member left must use a remote one.
	pub := connectNATS(t, servers[0].ClientURL())
	for i := 0; i < 300; i++ {
		pub.Publish("q", nil)
	}
	pub.Flush()
	waitFor(t, 5*time.Second, "all queue messages", func() bool { return total.Load() == 300 })
	if per[0].Load() != 300 {
		t.Fatalf("local member should be preferred: %d/%d/%d", per[0].Load(), per[1].Load(), per[2].Load())
	}
	if err := pub.Flush(); err != nil || total.Load() != 300 {
		t.Fatalf("exactly once: %d", total.Load())
	}
}

func TestRouteInterestRemovedAndReconnect(t *testing.T) {
	servers := runCluster(t, 2, nil)
	nc := connectNATS(t, servers[1].ClientURL())
	sub, _ := nc.SubscribeSync("gone")
	nc.Flush()
	waitForInterest(t, servers, "gone")
	sub.Unsubscribe()
	nc.Flush()
	waitFor(t, 5*time.Second, "interest removal", func() bool {
		return len(servers[0].globalAccount().sl.Match("gone").Plain) == 0
	})
	// Restart the second server on the same ports: the first reconnects
	// (it dialled the second? no: the second dialled the first, so the
	// restarted second dials again) and interest flows again.
	clientPort := servers[1].Addr().(*net.TCPAddr).Port
	clusterPort := servers[1].ClusterAddr().Port
	o := servers[1].getOpts().Clone()
	o.Port, o.Cluster.Port = clientPort, clusterPort
	servers[1].Shutdown()
	waitFor(t, 5*time.Second, "route down", func() bool { return servers[0].NumRoutes() == 0 })
	s2 := runServer(t, o)
	waitForMesh(t, []*Server{servers[0], s2})
	nc2 := connectNATS(t, s2.ClientURL())
	sub2, _ := nc2.SubscribeSync("back")
	nc2.Flush()
	waitForInterest(t, []*Server{servers[0], s2}, "back")
	pub := connectNATS(t, servers[0].ClientURL())
	pub.Publish("back", []byte("ok"))
	if m, err := sub2.NextMsg(2 * time.Second); err != nil || string(m.Data) != "ok" {
		t.Fatalf("after restart: %v %v", m, err)
	}
}

func TestRouteConnectURLsInInfo(t *testing.T) {
	servers := runCluster(t, 3, nil)
	want := map[string]bool{}
	for _, s := range servers {
		want[strings.TrimPrefix(s.ClientURL(), "nats://")] = true
	}
	// Peers learn a server's client port from its gossip once it is bound.
	defer func() {
		if t.Failed() {
			for _, r := range servers[0].routeList() {
				t.Logf("route to %s: client URL %q", r.remote.Name, r.remote.ClientURL)
			}
		}
	}()
	waitFor(t, 5*time.Second, "every client URL in INFO", func() bool {
		got := map[string]bool{}
		for _, u := range servers[0].connectURLs() {
			got[u] = true
		}
		for u := range want {
			if !got[u] {
				return false
			}
		}
		return true
	})
	nc := connectNATS(t, servers[0].ClientURL())
	if got := nc.DiscoveredServers(); len(got) != 2 {
		t.Fatalf("a client discovers the other two servers, got %v", got)
	}
}

func TestRouteDeadPeerDetected(t *testing.T) {
	setForTest(t, &routePingInterval, 200*time.Millisecond)
	servers := runCluster(t, 2, nil)
	// A fake peer that completes the handshake and then goes silent.
	nc, err := net.Dial("tcp", servers[0].ClusterAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	fake := `INFO {"server_id":"FAKE","server_name":"fake","cluster":"TEST","tern_route_proto":1}` + "\r\n"
	if _, err := nc.Write([]byte(fake)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "fake route registered", func() bool { return servers[0].NumRoutes() == 2 })
	waitFor(t, 5*time.Second, "silent route dropped", func() bool {
		return servers[0].NumRoutes() == 1 && servers[0].routeFor("FAKE") == nil
	})
}

// TestRouteNoLossUnderLoad: a burst published on one server reaches a
// subscriber on another in full and in order (routes must not drop
// messages when their reader or writer is busy).
func TestRouteNoLossUnderLoad(t *testing.T) {
	servers := runCluster(t, 2, nil)
	sub := connectNATS(t, servers[1].ClientURL())
	var got atomic.Int64
	var bad atomic.Int64
	s, err := sub.Subscribe("burst", func(m *nats.Msg) {
		if string(m.Data) != fmt.Sprint(got.Load()) {
			bad.Add(1)
		}
		got.Add(1)
	})
	if err != nil {
		t.Fatal(err)
	}
	s.SetPendingLimits(-1, -1)
	sub.Flush()
	waitForInterest(t, servers, "burst")
	pub := connectNATS(t, servers[0].ClientURL())
	const n = 200000
	for i := 0; i < n; i++ {
		if err := pub.Publish("burst", []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	pub.Flush()
	deadline := time.Now().Add(20 * time.Second)
	for got.Load() != n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got.Load() != n {
		v0, v1 := servers[0].varz(), servers[1].varz()
		t.Fatalf("received %d of %d (server A in %d out %d, B in %d out %d)", got.Load(), n, v0.InMsgs, v0.OutMsgs, v1.InMsgs, v1.OutMsgs)
	}
	if bad.Load() != 0 {
		t.Fatalf("%d messages out of order or corrupted", bad.Load())
	}
}

// An unsubscribe racing a subscribe on one server must leave the peer
// routing to the subscriber: the RS- of the last subscriber going and the
// RS+ of the next one arriving reach the peer in the order the interest
// count changed (interestChanged queues under routes.mu). The test hook
// stretches the time before queueing, as a busy machine would.
func TestRouteInterestOrderUnderChurn(t *testing.T) {
	testInterestQueueDelay = func() { time.Sleep(time.Duration(rand.Intn(2000)) * time.Microsecond) }
	t.Cleanup(func() { testInterestQueueDelay = nil })
	servers := runCluster(t, 2, nil)
	a, b := servers[0], servers[1]
	x, y := connectNATS(t, a.ClientURL()), connectNATS(t, a.ClientURL())
	peerSubs := func(subject string) int { return len(b.globalAccount().sl.Match(subject).Plain) }
	for round := 0; round < 30; round++ {
		subject := fmt.Sprintf("churn.%d", round)
		leaving, _ := y.SubscribeSync(subject)
		y.Flush()
		waitFor(t, 5*time.Second, "interest on the peer", func() bool { return peerSubs(subject) == 1 })
		var wg sync.WaitGroup
		var staying *nats.Subscription
		wg.Add(2)
		go func() { defer wg.Done(); leaving.Unsubscribe(); y.Flush() }()
		go func() { defer wg.Done(); staying, _ = x.SubscribeSync(subject); x.Flush() }()
		wg.Wait()
		waitFor(t, 5*time.Second, "the peer routing to the staying subscriber", func() bool { return peerSubs(subject) == 1 })
		staying.Unsubscribe()
		x.Flush()
		waitFor(t, 5*time.Second, "interest gone on the peer", func() bool { return peerSubs(subject) == 0 })
	}
}
