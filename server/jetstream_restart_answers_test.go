package server

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestJetStreamClusterRestartAnswersNoOldCreates: the server that answered
// a batch of creates (the meta leader, their origin) restarts and applies
// its meta log again. It answers none of them a second time: each answer
// was a goroutine waiting for the stream's leader and building its info
// while the groups started, ~3,700 of them at a restart with 10,000
// streams, contending with the groups' leader updates (scripts/stream-scale).
func TestJetStreamClusterRestartAnswersNoOldCreates(t *testing.T) {
	answers := map[string]*atomic.Int64{"S1": {}, "S2": {}, "S3": {}}
	testHookMetaAnswer = func(s *Server, me *metaEntry) {
		if me.Op == "add" {
			answers[s.Name()].Add(1)
		}
	}
	t.Cleanup(func() { testHookMetaAnswer = nil }) // after the cluster stopped
	c := runJSCluster(t, 3)
	leader := c.waitMetaLeader()
	nc := connectNATS(t, leader.ClientURL())
	js, _ := jetstream.New(nc)
	const n = 30
	for i := 0; i < n; i++ {
		createStream(t, js, jetstream.StreamConfig{Name: fmt.Sprintf("RA%d", i), Replicas: 3})
	}
	nc.Close()
	name := leader.Name()
	if got := answers[name].Load(); got != n {
		t.Fatalf("the meta leader %s started %d answers to %d creates: not their origin", name, got, n)
	}
	idx := 0
	for i, s := range c.servers {
		if s == leader {
			idx = i
		}
	}
	leader.Shutdown()
	c.servers[idx] = runServer(t, c.opts[idx])
	s := c.servers[idx]
	waitFor(t, 20*time.Second, "every replica started on the restarted server", func() bool {
		for i := 0; i < n; i++ {
			if c.replicaOn(s, fmt.Sprintf("RA%d", i)) == nil {
				return false
			}
		}
		return true
	})
	if got := answers[name].Load(); got != n {
		t.Fatalf("the restarted %s answered %d old creates again", name, got-n)
	}
	// A create after the restart is answered as ever.
	nc = connectNATS(t, s.ClientURL())
	defer nc.Close()
	js, _ = jetstream.New(nc)
	c.waitMetaLeader()
	createStream(t, js, jetstream.StreamConfig{Name: "RA-NEW", Replicas: 3})
}
