package server

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A server added to a stream's group by a scale (R1 -> R2 -> R3: the R2
// placement leaves it out, the R3 one adds it) keeps its group's log when
// it restarts: replaying its meta log, it applies the R2 placement before
// the R3 one, and acting on it removed the group directory, acknowledged
// entries and all; the replica then joined empty and voted as a member
// that never acknowledged anything (jetstream_replay_leaves.go). Started
// alone, so that nothing can catch it up, its replica must hold its log.
// A final placement without it still removes the directory after the
// replay.
func TestJetStreamClusterReplayKeepsMovedInGroupDir(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	st := createStream(t, js, jetstream.StreamConfig{Name: "RK", Subjects: []string{"rk.>"}, Replicas: 1})
	sent := 0
	publish := func(js jetstream.JetStream, n int) {
		t.Helper()
		for range n {
			if _, err := js.Publish(ctx(t), fmt.Sprintf("rk.%d", sent%5), []byte("x")); err != nil {
				t.Fatalf("publish %d: %v", sent, err)
			}
			sent++
		}
	}
	scale := func(js jetstream.JetStream, n int) []string {
		t.Helper()
		cfg := st.CachedInfo().Config
		cfg.Replicas = n
		if _, err := js.UpdateStream(ctx(t), cfg); err != nil {
			t.Fatalf("scaling to %d: %v", n, err)
		}
		waitFor(t, 20*time.Second, fmt.Sprintf("%d current replicas", n), func() bool {
			si, err := st.Info(ctx(t))
			if err != nil || si.Cluster == nil || si.Cluster.Leader == "" || len(si.Cluster.Replicas) != n-1 {
				return false
			}
			for _, p := range si.Cluster.Replicas {
				if !p.Current {
					return false
				}
			}
			// Server 0 (not necessarily the meta leader) applied the scale.
			sa := c.servers[0].js.Load().cluster.assignment(globalAccountName, "RK")
			return len(c.replicas("RK")) == n && sa != nil && len(sa.Peers) == n
		})
		return c.servers[0].js.Load().cluster.assignment(globalAccountName, "RK").Peers
	}
	publish(js, 10)
	r2 := scale(js, 2)
	publish(js, 10)
	scale(js, 3)
	publish(js, 30)
	c.waitAllApplied(t, "RK", 3, uint64(sent), 20*time.Second)

	zi := slices.IndexFunc(c.servers, func(s *Server) bool { return !slices.Contains(r2, s.Name()) })
	z := c.servers[zi]
	zjs := z.js.Load()
	dir := zjs.groupDir(zjs.cluster.assignment(globalAccountName, "RK"))
	held := replicaGroup(c.replicaOn(z, "RK")).statusSnapshot().LastIndex
	if held == 0 {
		t.Fatalf("%s holds no log for RK before the restart", z.Name())
	}

	// The whole cluster stops; z starts alone.
	for _, s := range c.servers {
		s.Shutdown()
	}
	c.servers[zi] = runServer(t, c.opts[zi])
	z = c.servers[zi]
	waitFor(t, 10*time.Second, "RK's replica on "+z.Name()+" started", func() bool {
		g := replicaGroup(c.replicaOn(z, "RK"))
		return g != nil && g.statusSnapshot().ID != 0
	})
	if last := replicaGroup(c.replicaOn(z, "RK")).statusSnapshot().LastIndex; last < held {
		t.Fatalf("%s restarted alone with RK's log at index %d, held %d before: its group directory was removed replaying the meta log",
			z.Name(), last, held)
	}

	for i := range c.servers {
		if i != zi {
			c.servers[i] = runServer(t, c.opts[i])
		}
	}
	c.waitMetaLeader()
	_, js = jsClient(t, c.servers[(zi+1)%3])
	st = waitStream(t, js, "RK")
	publish(js, 10)
	checkReplicasAgree(t, c, "RK", uint64(sent))

	// Back to R2: the replica that leaves keeps its log (stopReplicaIf:
	// the removal may not survive a power loss). Deleted while that
	// server is down, the stream's directory goes once it replays the
	// deletion.
	r2 = scale(js, 2)
	li := slices.IndexFunc(c.servers, func(s *Server) bool { return !slices.Contains(r2, s.Name()) })
	ljs := c.servers[li].js.Load()
	dir = ljs.groupDir(ljs.cluster.assignment(globalAccountName, "RK"))
	if !ljs.exists(dir) {
		t.Fatalf("%s removed its group directory leaving RK (it keeps it until the stream is deleted)", c.servers[li].Name())
	}
	c.servers[li].Shutdown()
	c.waitMetaLeader() // li may have led the meta group: its survivors drop the delete until they elect
	_, js = jsClient(t, c.servers[(li+1)%3])
	if err := js.DeleteStream(ctx(t), "RK"); err != nil {
		t.Fatal(err)
	}
	c.servers[li] = runServer(t, c.opts[li])
	c.waitMetaLeader()
	waitFor(t, 10*time.Second, "the group directory of a deleted stream removed after the replay", func() bool {
		return !c.servers[li].js.Load().exists(dir)
	})
	for i, s := range c.servers {
		if c.replicaOn(s, "RK") != nil {
			t.Fatalf("server %d still runs a replica of the deleted stream", i)
		}
	}
}

// waitStream waits until the stream answers its info (a leader is known).
func waitStream(t *testing.T, js jetstream.JetStream, name string) jetstream.Stream {
	t.Helper()
	var st jetstream.Stream
	waitFor(t, 20*time.Second, "stream "+name+" answering", func() bool {
		var err error
		st, err = js.Stream(ctx(t), name)
		return err == nil
	})
	return st
}

// replicaGroup is mset's raft group (nil: no replica or not started).
func replicaGroup(mset *stream) *raftGroup {
	if mset == nil {
		return nil
	}
	mset.mu.Lock()
	defer mset.mu.Unlock()
	return mset.group
}
