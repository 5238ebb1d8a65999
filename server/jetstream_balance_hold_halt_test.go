package server

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats.go/jetstream"
)

// A replica started from what the server held that halts before it is
// current, and is restarted (stream_halt_restart.go), counts once in
// restartProgress.started: the halted one is uncounted as it stops. With
// both counted the server's catching up, and the leader balancer's hold,
// lasted restartHoldMax (2 minutes) although every replica it runs was
// current.
func TestJetStreamClusterCatchUpEndsAfterHaltRestart(t *testing.T) {
	c, s, jc := restartAloneWith(t, "HALT", "HALT")
	name := streamGroupName(globalAccountName, "HALT")
	g := s.raftGroup(name)
	if jc.restart.current.Load() != 0 {
		t.Fatalf("%d replicas current with no leader", jc.restart.current.Load())
	}
	g.control(func(*raft.Node) { panic("test: loop bug") })
	waitFor(t, 20*time.Second, "HALT's replica restarted", func() bool {
		ng := s.raftGroup(name)
		return ng != nil && ng != g && ng.healthy() == nil
	})
	for i := range 2 {
		c.servers[i] = runServer(t, c.opts[i])
	}
	waitCaughtUp(t, jc)
}

// A replica started from what the server held that halts before it is
// current and whose restarts are given up never becomes current: it is
// uncounted as it halts, so the server's catching up ends once the others
// are current, not at restartHoldMax.
func TestJetStreamClusterCatchUpEndsAfterHaltGivenUp(t *testing.T) {
	c, s, jc := restartAloneWith(t, "BAD", "bad")
	haltUntilGivenUp(t, s)
	for i := range 2 {
		c.servers[i] = runServer(t, c.opts[i])
	}
	waitCaughtUp(t, jc)
}

// restartAloneWith makes streams KEEP and name (on subject) on three
// servers, stops them all and restarts the third alone, waiting until it
// started both replicas from what it held: with no leader to hear, none
// becomes current. It returns the cluster, the restarted server and its
// JetStream cluster.
func restartAloneWith(t *testing.T, name, subject string) (*jsTestCluster, *Server, *jsCluster) {
	t.Helper()
	setForTest(t, &haltRestartFirst, 50*time.Millisecond)
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "KEEP", Subjects: []string{"KEEP"}, Replicas: 3})
	createStream(t, js, jetstream.StreamConfig{Name: name, Subjects: []string{subject}, Replicas: 3})
	for i := range 3 {
		c.servers[i].Shutdown()
	}
	c.servers[2] = runServer(t, c.opts[2])
	jc := c.servers[2].js.Load().cluster
	waitFor(t, 30*time.Second, "both replicas started alone", func() bool { return jc.restart.started.Load() == 2 })
	return c, c.servers[2], jc
}
