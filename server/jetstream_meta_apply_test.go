package server

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestJetStreamClusterMetaHaltsOnUndecodableEntry: a meta entry that
// cannot be decoded halts the meta group on every server (it stops
// applying, says so, and /healthz reports it) instead of being skipped,
// which would let the servers' assignments drift apart; JetStream
// requests that need the meta group then get 10008.
func TestJetStreamClusterMetaHaltsOnUndecodableEntry(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "BEFORE", Replicas: 3})
	leader := c.waitMetaLeader()
	jc := leader.js.Load().cluster
	jc.mu.Lock()
	meta := jc.meta
	jc.mu.Unlock()
	meta.Propose([]byte(`{"op":"add","sa":`), nil)
	for _, s := range c.servers {
		s := s
		waitFor(t, 10*time.Second, s.Name()+"'s meta group to halt", func() bool {
			jc := s.js.Load().cluster
			jc.mu.Lock()
			g := jc.meta
			jc.mu.Unlock()
			return g.healthy() != nil
		})
		// A halted member knows no leader: a server that still named one
		// left a client's request to it, and the halted leader did not
		// answer (the create below timed out instead of 10008).
		if s.js.Load().cluster.metaLeaderKnown() {
			t.Fatalf("%s's halted meta group still names a leader", s.Name())
		}
		req := httptest.NewRequest("GET", "/healthz?js-server-only=true", nil)
		if h := s.jsHealth(req); h == nil || h.StatusCode != 503 || !strings.Contains(h.Error, "meta group halted") {
			t.Fatalf("%s's health: %+v", s.Name(), h)
		}
	}
	_, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "AFTER", Replicas: 3})
	if apiCode(err) != 10008 {
		t.Fatalf("stream create with the meta group halted: %v", err)
	}
}
