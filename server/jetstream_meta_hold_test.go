package server

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A stream create sent through a survivor right after the meta leader's
// server shut down, while the survivors (their meta group awake) still
// believe in it, is answered once, by the new leader, within the client's
// timeout. It used to go unanswered until the client's 5 s ran out,
// although a new leader was ready in under a second.
func TestJetStreamClusterMetaCreateHeldOverLeaderDeath(t *testing.T) {
	c := runJSCluster(t, 3)
	ml := c.waitMetaLeader()
	var via *Server
	for _, s := range c.servers {
		if s != ml {
			via = s
		}
	}
	nc, js := jsClient(t, via)
	// A create just before keeps the meta group awake: a quiet follower
	// forgets a dead leader at once and answers 10008 instead.
	createStream(t, js, jetstream.StreamConfig{Name: "A", Subjects: []string{"a"}, Replicas: 3})
	inbox := nats.NewInbox()
	answers, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	ml.Shutdown()
	start := time.Now()
	req := mustJSON(t, jetstream.StreamConfig{Name: "B", Subjects: []string{"b"}, Replicas: 2})
	if err := nc.PublishRequest("$JS.API.STREAM.CREATE.B", inbox, req); err != nil {
		t.Fatal(err)
	}
	m, err := answers.NextMsg(4500 * time.Millisecond)
	if err != nil {
		t.Fatalf("no answer %v after the meta leader's shutdown: %v", time.Since(start).Round(time.Millisecond), err)
	}
	t.Logf("answered %v after the meta leader's shutdown", time.Since(start).Round(time.Millisecond))
	if !strings.Contains(string(m.Data), "stream_create_response") || strings.Contains(string(m.Data), `"error"`) {
		t.Fatalf("create: %s", m.Data)
	}
	if m, err := answers.NextMsg(2 * metaResendEvery); err == nil {
		t.Fatalf("a second answer: %s", m.Data)
	}
	if nl := c.waitMetaLeader(); nl == ml {
		t.Fatal("the server shut down still leads")
	}
	names := 0
	for name := range js.StreamNames(ctx(t)).Name() {
		if name != "A" && name != "B" {
			t.Fatalf("unexpected stream %s", name)
		}
		names++
	}
	if names != 2 {
		t.Fatalf("%d streams, want A and B", names)
	}
}
