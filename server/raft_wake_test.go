package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A replica that starts well after its server's routes came back (a
// server restarting thousands of streams starts them over tens of
// seconds), so that whatever its quiet leader sent as the route came back
// was kept a second (raft_early.go) and dropped, catches up without a
// write: the leader, woken by the route, heartbeats the member until it
// answers (so it stays awake meanwhile), and the replica says hello as it
// starts.
func TestJetStreamClusterLateReplicaWakesQuietLeader(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	st := createStream(t, js, jetstream.StreamConfig{Name: "EW", Subjects: []string{"ew"}, Replicas: 3})
	c.logViewsOnFailure(t, "EW")
	for i := range 3 {
		if _, err := js.Publish(ctx(t), "ew", fmt.Appendf(nil, "a%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 15*time.Second, "every group asleep", func() bool { return c.groupsAwake() == "" })

	down := c.stopFollower(st.CachedInfo().Cluster.Leader)
	const total = 7
	for i := 3; i < total; i++ {
		if _, err := js.Publish(ctx(t), "ew", fmt.Appendf(nil, "b%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 15*time.Second, "the two left asleep", func() bool { return c.groupsAwake() == "" })

	// The restarted server starts EW's replica lateDelay after its routes
	// are up (the other groups, the meta group among them, start at once).
	const lateDelay = 2500 * time.Millisecond
	name := c.opts[down].ServerName
	started := make(chan time.Time, 1)
	testHookReplicaStarting = func(s *Server, sa *streamAssignment) {
		if s.Name() != name || sa.Config.Name != "EW" {
			return
		}
		for deadline := time.Now().Add(15 * time.Second); s.NumRoutes() < 2 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(lateDelay) // the fault: the replica starts late
		started <- time.Now()
	}
	t.Cleanup(func() { testHookReplicaStarting = nil }) // after the cluster stopped
	s := runServer(t, c.opts[down])
	c.servers[down] = s
	var t0 time.Time
	select {
	case t0 = <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the restarted server never started EW's replica")
	}
	if s.NumRoutes() < 2 {
		t.Fatalf("EW's replica started before the routes were up")
	}
	// No publish from here on: the group alone must bring the replica up
	// to date.
	waitFor(t, 5*time.Second, "the late replica current", func() bool {
		m := c.replicaOn(s, "EW")
		if m == nil {
			return false
		}
		var ss StreamState
		m.st().FastState(&ss)
		return ss.LastSeq == total && ss.Msgs == total
	})
	t.Logf("the late replica caught up %v after it started", time.Since(t0))
	waitFor(t, 15*time.Second, "every group asleep after the catch-up", func() bool { return c.groupsAwake() == "" })
}
