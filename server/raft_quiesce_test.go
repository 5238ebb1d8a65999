package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// groupsAwake lists the raft groups of the running servers that are not
// asleep (quiescent, no ticks).
func (c *jsTestCluster) groupsAwake() string {
	var awake []string
	for _, s := range c.servers {
		if !s.Running() {
			continue
		}
		s.raft.mu.Lock()
		for name, g := range s.raft.groups {
			if !g.sleeping.Load() {
				awake = append(awake, s.Name()+"/"+name)
			}
		}
		s.raft.mu.Unlock()
	}
	return strings.Join(awake, " ")
}

// Idle R3 streams quiesce on every server: no group ticks. A publish
// wakes its stream, which then quiesces again; a server shut down while
// its groups sleep hands its streams to new leaders within the election
// timeout plus liveness detection, and a restarted server is caught up.
func TestJetStreamClusterIdleStreamsQuiesce(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	const n = 12
	for i := range n {
		createStream(t, js, jetstream.StreamConfig{Name: fmt.Sprintf("Q%d", i), Subjects: []string{fmt.Sprintf("q.%d", i)}, Replicas: 3})
		if _, err := js.Publish(ctx(t), fmt.Sprintf("q.%d", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 15*time.Second, "every group asleep", func() bool { return c.groupsAwake() == "" })

	// A publish into a sleeping stream is answered at once.
	t0 := time.Now()
	if _, err := js.Publish(ctx(t), "q.3", []byte("y")); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Fatalf("a publish into a quiet stream took %v", d)
	}
	waitFor(t, 15*time.Second, "every group asleep again", func() bool { return c.groupsAwake() == "" })

	// Stop the server leading Q0 while everything sleeps.
	info, err := js.Stream(ctx(t), "Q0")
	if err != nil {
		t.Fatal(err)
	}
	leader := info.CachedInfo().Cluster.Leader
	var victim int
	for i, s := range c.servers {
		if s.Name() == leader {
			victim = i
		}
	}
	survivor := c.servers[(victim+1)%3]
	_, js2 := jsClient(t, survivor)
	c.servers[victim].Shutdown()
	start := time.Now()
	for i := range n {
		waitFor(t, 10*time.Second, "a publish into every stream accepted", func() bool {
			pctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			// A retry of a publish that was stored but answered late
			// (under -race) is a duplicate, not a third message.
			_, err := js2.Publish(pctx, fmt.Sprintf("q.%d", i), []byte("z"), jetstream.WithMsgID(fmt.Sprintf("z%d", i)))
			return err == nil
		})
	}
	t.Logf("every stream accepted a publish %v after the shutdown", time.Since(start))
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("streams took %v to accept publishes after their leader's server stopped", d)
	}
	waitFor(t, 15*time.Second, "the two left asleep", func() bool { return c.groupsAwake() == "" })

	c.servers[victim] = runServer(t, c.opts[victim])
	t.Cleanup(func() {
		if t.Failed() {
			for i := range n {
				t.Logf("Q%d:\n%s", i, c.raftViews(fmt.Sprintf("Q%d", i)))
			}
		}
	})
	for i := range n {
		name := fmt.Sprintf("Q%d", i)
		waitFor(t, 30*time.Second, "the restarted server current in "+name, func() bool {
			m := c.servers[victim].js.Load().account(globalAccountName)
			if m == nil {
				return false
			}
			mset := m.lookup(name)
			return mset != nil && mset.st().State().Msgs == uint64(map[bool]int{true: 3, false: 2}[i == 3])
		})
	}
	waitFor(t, 15*time.Second, "every group asleep after the restart", func() bool { return c.groupsAwake() == "" })
}

// A server that speaks an older route protocol does not know the Quiesce
// mark (nor pings for node liveness): groups with a replica on it never
// quiesce, on no server.
func TestJetStreamClusterNoQuiesceWithOlderReplica(t *testing.T) {
	c := runJSClusterWith(t, 3, func(i int, o *Options) {
		if i == 2 {
			o.routeProto = routeProtoQuiesce - 1
		}
	})
	_, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "OLD", Subjects: []string{"old"}, Replicas: 3})
	// The create is answered once a leader serves; a replica may start a
	// moment later.
	waitFor(t, 10*time.Second, "three replicas running", func() bool {
		return strings.Count(c.groupsAwake(), "/S-$G-OLD") == 3
	})
	for range 30 { // 3 s: ten election timeouts
		if aw := c.groupsAwake(); strings.Count(aw, "/S-$G-OLD") != 3 {
			t.Fatalf("a group with an older replica slept: awake %s", aw)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A direct get (a linearizable read: a read-index round) through any
// server of a quiet stream wakes the group and is answered with the
// last value.
func TestJetStreamClusterDirectGetOnQuietStream(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	kv, err := js.CreateKeyValue(ctx(t), jetstream.KeyValueConfig{Bucket: "QG", Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		val := fmt.Sprintf("v%d", round)
		if _, err := kv.Put(ctx(t), "k", []byte(val)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 15*time.Second, "every group asleep", func() bool { return c.groupsAwake() == "" })
		for _, s := range c.servers {
			_, jss := jsClient(t, s)
			kvs, err := jss.KeyValue(ctx(t), "QG")
			if err != nil {
				t.Fatal(err)
			}
			t0 := time.Now()
			e, err := kvs.Get(ctx(t), "k")
			if err != nil || string(e.Value()) != val {
				t.Fatalf("round %d: get through %s: %v %v", round, s.Name(), e, err)
			}
			if d := time.Since(t0); d > 2*time.Second {
				t.Fatalf("a get through %s took %v", s.Name(), d)
			}
		}
	}
}

// Whether a server's groups quiesce is decided once (raftQuiesces is read
// on every tick): a reload keeps the route protocol a test made the
// server speak, so the decision and what its peers were told stay true.
func TestRaftQuiescesKeptOnReload(t *testing.T) {
	for _, proto := range []int{0, routeProtoQuiesce - 1} {
		o := testOptions()
		o.routeProto = proto
		s := runServer(t, o)
		want := proto == 0
		if s.raftQuiesces() != want {
			t.Fatalf("route protocol %d: quiesces %v", proto, !want)
		}
		nw := s.getOpts().Clone()
		nw.routeProto, nw.Port = routeProtoQuiesce-1-proto, RANDOM_PORT // the other protocol
		if err := s.ReloadOptions(nw); err != nil {
			t.Fatal(err)
		}
		if s.raftQuiesces() != want || s.getOpts().routeProto != proto {
			t.Fatalf("route protocol %d: after a reload quiesces %v, protocol %d", proto, s.raftQuiesces(), s.getOpts().routeProto)
		}
	}
}
