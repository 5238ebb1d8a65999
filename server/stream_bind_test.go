package server

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A stream's replica holds its raft group from before the group runs: the
// first leader may lead, announce itself and take a publish before
// startReplica returns. Stretching that moment (2 s after the group
// started, on the first leader when it is not the meta leader, which
// answers the create) made the publish right after the create get 10008
// ("temporarily unavailable": the stream had no group yet).
func TestJetStreamClusterPublishRightAfterCreateFindsGroup(t *testing.T) {
	var stretched atomic.Int32
	testHookReplicaStarted = func(s *Server, sa *streamAssignment) {
		js := s.js.Load()
		if strings.HasPrefix(sa.Config.Name, "BIND") && s.Name() == sa.firstLeader() && js != nil && !js.cluster.isMetaLeader() {
			stretched.Add(1)
			time.Sleep(2 * time.Second) // the moment stretched: the group runs meanwhile
		}
	}
	t.Cleanup(func() { testHookReplicaStarted = nil }) // after the cluster stopped
	c := runJSCluster(t, 3)
	c.waitMetaLeader()
	nc := connectNATS(t, c.servers[0].ClientURL())
	js, _ := jetstream.New(nc)
	for i := 0; stretched.Load() < 2; i++ {
		if i == 12 {
			t.Fatalf("the first leader was the meta leader %d times in 12", 12-stretched.Load())
		}
		before := stretched.Load()
		name := fmt.Sprintf("BIND%d", i)
		createStream(t, js, jetstream.StreamConfig{Name: name, Subjects: []string{"bind." + name}, Replicas: 3, Storage: jetstream.FileStorage})
		ack, err := js.Publish(ctx(t), "bind."+name, []byte("x"))
		if err != nil {
			t.Fatalf("%s (stretched %v): publish right after the create: %v", name, stretched.Load() > before, err)
		}
		if ack.Sequence != 1 {
			t.Fatalf("%s: stored as %d", name, ack.Sequence)
		}
	}
}
