package server

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// No client may say on $JSC.CATCHUP that a server catches up: the word
// stops the others' leader balancing toward that server, so a system
// user repeating it held the balancer for good. The publish is refused
// with a permissions violation and the connection stays.
func TestJetStreamClusterCatchUpNotFromClient(t *testing.T) {
	c := runJSClusterSysUser(t)
	c.waitMetaLeader()
	victim := c.servers[1].Name()
	errs := make(chan error, 4)
	nc := connectNATS(t, c.servers[0].ClientURL(), nats.UserInfo("sys", "sys"),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))
	if err := nc.Publish(catchUpSubject, []byte(victim+" 1")); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		t.Logf("refused: %v", err)
	case <-time.After(2 * time.Second):
		t.Errorf("the client was not told its publish to %s was refused", catchUpSubject)
	}
	if !nc.IsConnected() {
		t.Error("the connection closed")
	}
	// The publish was answered before anything could be delivered; a
	// word taken would be in a server's view by now.
	for _, s := range c.servers {
		if p := s.js.Load().cluster.catchUp.peers.Load(); p != nil {
			if _, ok := (*p)[victim]; ok {
				t.Errorf("%s took a client's word that %s catches up", s.Name(), victim)
			}
		}
	}
}

// A word on $JSC.CATCHUP counts only from the route of the server it
// names, of a route protocol that keeps its clients off the subject: an
// older server relays its clients' publishes, and a server speaks only
// for itself.
func TestJetStreamClusterCatchUpOnlyFromItsRoute(t *testing.T) {
	c := runJSCluster(t, 3)
	c.waitMetaLeader()
	jc := c.servers[0].js.Load().cluster
	other := c.servers[1].Name()
	from := func(name string, proto int) *client {
		return &client{srv: c.servers[0], route: &route{remote: routeInfo{Name: name, Proto: proto}}}
	}
	took := func() bool {
		p := jc.catchUp.peers.Load()
		if p == nil {
			return false
		}
		_, ok := (*p)[other]
		return ok
	}
	cases := []struct {
		what string
		c    *client
	}{
		{"another server's route", from(c.servers[2].Name(), routeProto)},
		{"its route at protocol 10", from(other, routeProtoClusterOnly)},
		{"a client", &client{srv: c.servers[0]}},
	}
	for _, tc := range cases {
		jc.catchUpHeard(nil, tc.c, nil, catchUpSubject, "", nil, []byte(other+" 1"))
		if took() {
			t.Fatalf("a word that %s catches up from %s was taken", other, tc.what)
		}
	}
	jc.catchUpHeard(nil, from(other, routeProto), nil, catchUpSubject, "", nil, []byte(other+" 1"))
	if !took() {
		t.Fatalf("%s's own word over its route was not taken", other)
	}
}
