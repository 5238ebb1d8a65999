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
	setForTest(t, &haltRestartFirst, 50*time.Millisecond)
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "KEEP", Subjects: []string{"KEEP"}, Replicas: 3})
	createStream(t, js, jetstream.StreamConfig{Name: "HALT", Subjects: []string{"HALT"}, Replicas: 3})
	for i := range 3 {
		c.servers[i].Shutdown()
	}
	// Alone, the restarted server's replicas hear no leader: none becomes current.
	c.servers[2] = runServer(t, c.opts[2])
	s := c.servers[2]
	jc := s.js.Load().cluster
	waitFor(t, 30*time.Second, "both replicas started alone", func() bool { return jc.restart.started.Load() == 2 })
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
	setForTest(t, &haltRestartFirst, 50*time.Millisecond)
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "KEEP", Subjects: []string{"KEEP"}, Replicas: 3})
	createStream(t, js, jetstream.StreamConfig{Name: "BAD", Subjects: []string{"bad"}, Replicas: 3})
	for i := range 3 {
		c.servers[i].Shutdown()
	}
	c.servers[2] = runServer(t, c.opts[2])
	s := c.servers[2]
	jc := s.js.Load().cluster
	waitFor(t, 30*time.Second, "both replicas started alone", func() bool { return jc.restart.started.Load() == 2 })
	haltUntilGivenUp(t, s)
	for i := range 2 {
		c.servers[i] = runServer(t, c.opts[i])
	}
	waitCaughtUp(t, jc)
}
