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
	var via *Server
	for _, s := range c.servers {
		if s != ml {
			via = s
		}
	}
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
	var via *Server
	for _, s := range c.servers {
		if s != ml {
			via = s
		}
	}
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
