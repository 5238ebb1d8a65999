package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// When the meta leader's server shuts down, meta requests work again
// through a survivor once a new meta leader is elected (an election
// timeout later). A request sent before that, while the survivors still
// believe in the dead leader, goes unanswered, as in nats-server: the
// client times out and retries.
func TestJetStreamClusterMetaLeaderShutdownCreatesResume(t *testing.T) {
	c := runJSCluster(t, 3)
	ml := c.waitMetaLeader()
	via := c.notMetaLeader(ml)
	_, js := jsClient(t, via)
	createStream(t, js, jetstream.StreamConfig{Name: "A", Subjects: []string{"a"}, Replicas: 3})
	ml.Shutdown()
	start := time.Now()
	waitFor(t, 15*time.Second, "a stream created after the meta leader's shutdown", func() bool {
		cx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := js.CreateStream(cx, jetstream.StreamConfig{Name: "B", Subjects: []string{"b"}, Replicas: 2})
		if err != nil {
			t.Logf("%v after the shutdown: %v", time.Since(start).Round(time.Millisecond), err)
		}
		return err == nil
	})
	t.Logf("created %v after the shutdown", time.Since(start).Round(time.Millisecond))
	if nl := c.waitMetaLeader(); nl == ml {
		t.Fatal("the server shut down still leads")
	}
}

// waitMetaLeader after the meta leader's server shut down returns once a
// survivor leads and the other survivor knows it, so the next meta
// request is answered at once (it used to count the dead server, which
// still thinks it leads, and the survivors, which still believe in it).
func TestJetStreamClusterWaitMetaLeaderAfterLeaderShutdown(t *testing.T) {
	c := runJSCluster(t, 3)
	ml := c.waitMetaLeader()
	via := c.notMetaLeader(ml)
	nc, _ := jsClient(t, via)
	ml.Shutdown()
	if nl := c.waitMetaLeader(); nl == ml {
		t.Fatal("the server shut down still leads")
	}
	resp, err := nc.Request("$JS.API.INFO", nil, 2*time.Second)
	if err != nil {
		t.Fatalf("account info right after waitMetaLeader: %v", err)
	}
	if !strings.Contains(string(resp.Data), "account_info_response") || strings.Contains(string(resp.Data), `"error"`) {
		t.Fatalf("account info: %s", resp.Data)
	}
}

// A peer removal sent through a server that does not lead the meta group
// reaches the meta leader over the route from that server. When the third
// server is down, the entry commits only with that server's answer, which
// comes over the same route: the removal waiting for its entry on the
// route's read loop held it up until its 5 s ran out (10008, after the
// client's own timeout).
func TestJetStreamClusterPeerRemoveThroughFollowerCommits(t *testing.T) {
	c := runJSCluster(t, 3)
	ml := c.waitMetaLeader()
	var via, down *Server
	for _, s := range c.servers {
		switch {
		case s == ml:
		case via == nil:
			via = s
		default:
			down = s
		}
	}
	nc, js := jsClient(t, via)
	createStream(t, js, jetstream.StreamConfig{Name: "PR", Subjects: []string{"pr"}, Replicas: 3})
	down.Shutdown()
	if nl := c.waitMetaLeader(); nl != ml {
		t.Fatalf("meta leader changed from %s to %s", ml.Name(), nl.Name())
	}
	resp, err := nc.Request("$JS.API.STREAM.PEER.REMOVE.PR", []byte(`{"peer":"`+down.Name()+`"}`), 5*time.Second)
	if err != nil {
		t.Fatalf("peer remove through %s (meta leader %s): %v", via.Name(), ml.Name(), err)
	}
	if !strings.Contains(string(resp.Data), `"success":true`) {
		t.Fatalf("peer remove: %s", resp.Data)
	}
}
