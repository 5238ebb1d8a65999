package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A stream deleted while a server was down: the restarted server starts
// its replica from what it held (counted in restartProgress.started),
// then learns of the deletion and stops it, so that replica never becomes
// current. Its catching up must end once the replicas it still runs are
// current, not at restartHoldMax (2 minutes without leaderships by
// transfer and with its own balancer idle).
func TestJetStreamClusterCatchUpEndsWithDeletedStream(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	const n = 4
	for i := range n {
		name := fmt.Sprintf("KEEP%d", i)
		createStream(t, js, jetstream.StreamConfig{Name: name, Subjects: []string{name}, Replicas: 3})
	}
	createStream(t, js, jetstream.StreamConfig{Name: "GONE", Subjects: []string{"GONE"}, Replicas: 3})
	c.servers[2].Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := js.DeleteStream(ctx, "GONE"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	c.servers[2] = runServer(t, c.opts[2])
	jc := c.servers[2].js.Load().cluster
	waitFor(t, 30*time.Second, "the restarted server's kept replicas started", func() bool {
		return jc.restart.started.Load() >= n
	})
	waitCaughtUp(t, jc)
}

// waitCaughtUp waits up to 30 s for jc's server to stop catching up after
// its restart, and says how far it got if it does not.
func waitCaughtUp(t *testing.T, jc *jsCluster) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for jc.catchingUp() {
		if time.Now().After(deadline) {
			t.Fatalf("still catching up 30 s after its restart: %d of %d replicas started from what it held current",
				jc.restart.current.Load(), jc.restart.started.Load())
		}
		time.Sleep(50 * time.Millisecond) // polling the condition
	}
}
