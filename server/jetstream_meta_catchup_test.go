package server

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats.go/jetstream"
)

// runTaggedJSCluster runs a 3-server cluster whose server i has the tag
// node:i, so a test can pin a stream to one server.
func runTaggedJSCluster(t *testing.T) *jsTestCluster {
	c := runJSClusterWith(t, 3, func(i int, o *Options) { o.Tags = []string{fmt.Sprintf("node:%d", i)} })
	waitTagsKnown(t, c)
	return c
}

// waitTagsKnown waits until every server knows its peers' tags (from
// their route INFO), which placement by tags needs.
func waitTagsKnown(t *testing.T, c *jsTestCluster) {
	t.Helper()
	waitFor(t, 5*time.Second, "tags known", func() bool {
		for _, s := range c.servers {
			for _, r := range s.routeList() {
				if len(r.remote.Tags) == 0 {
					return false
				}
			}
		}
		return true
	})
}

// metaLeaderIndex is the index in c.servers of the meta leader.
func (c *jsTestCluster) metaLeaderIndex() int {
	return slices.Index(c.servers, c.waitMetaLeader())
}

// except is every server of c but the one at index i (shut down, say).
func (c *jsTestCluster) except(i int) []*Server {
	return slices.Delete(slices.Clone(c.servers), i, i+1)
}

// compactMeta makes the meta group compact its log on every running
// server but skip (-1: none): streams come and go until each one's meta
// log starts later than it did. round names the streams.
func compactMeta(t *testing.T, c *jsTestCluster, js jetstream.JetStream, skip int, round string) {
	t.Helper()
	// With skip shut down just before, the survivors may still believe in
	// it as the meta leader; a create sent before they elect another is
	// never answered.
	c.waitMetaLeader()
	floor := make([]uint64, len(c.servers))
	for i, s := range c.servers {
		if i != skip {
			floor[i], _ = s.js.Load().cluster.meta.log.FirstIndex()
		}
	}
	for i := 0; i < 6; i++ {
		name := fmt.Sprintf("CHURN%s%d", round, i)
		createStream(t, js, jetstream.StreamConfig{Name: name, Subjects: []string{name}, Replicas: 1})
		if err := js.DeleteStream(ctx(t), name); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range c.servers {
		if i == skip {
			continue
		}
		waitFor(t, 10*time.Second, "meta log compacted on "+s.Name(), func() bool {
			first, _ := s.js.Load().cluster.meta.log.FirstIndex()
			return first > floor[i]
		})
	}
}

// TestJetStreamClusterR1AfterMetaSnapshotCatchUp (issue 19): a server that
// catches up the meta group from the leader's snapshot started every
// stream placed on it as a joiner, a replica with no members that waits to
// learn them from a leader. An R1 stream's group of one then never elected
// anyone and the stream was never served again. Its R1 and R3 replicas
// must restart as the members their own logs say they are.
func TestJetStreamClusterR1AfterMetaSnapshotCatchUp(t *testing.T) {
	setForTest(t, &metaSnapshotEvery, 8)
	setForTest(t, &snapshotEvery, 4) // the streams' logs are compacted too
	c := runTaggedJSCluster(t)
	down := c.metaLeaderIndex() // its survivors must elect another first
	nc, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "ONE", Subjects: []string{"one"}, Replicas: 1,
		Placement: &jetstream.Placement{Tags: []string{fmt.Sprintf("node:%d", down)}}})
	createStream(t, js, jetstream.StreamConfig{Name: "THREE", Subjects: []string{"three"}, Replicas: 3})
	for i := 0; i < 20; i++ {
		for _, subj := range []string{"one", "three"} {
			if _, err := js.Publish(ctx(t), subj, []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.waitAllApplied(t, "THREE", 3, 20, 10*time.Second)
	compactMeta(t, c, js, -1, "A") // its own snapshot holds the streams
	name := c.servers[down].Name()
	c.servers[down].Shutdown()
	compactMeta(t, c, js, down, "B")
	c.servers[down] = runServer(t, c.opts[down])

	waitFor(t, 20*time.Second, "R1 stream ONE served with its 20 messages", func() bool {
		st, err := js.Stream(ctx(t), "ONE")
		if err != nil {
			return false
		}
		info := st.CachedInfo()
		return info.Cluster != nil && info.Cluster.Leader == name && info.State.Msgs == 20
	})
	if m, err := js.Stream(ctx(t), "ONE"); err != nil {
		t.Fatal(err)
	} else if msg, err := m.GetMsg(ctx(t), 20); err != nil || string(msg.Data) != "x" {
		t.Fatalf("message 20 of ONE: %v %v", msg, err)
	}
	// Its R3 replica resumes as a member of the group its log knows.
	var want []raft.ID
	for _, s := range c.servers {
		want = append(want, raftID(s.Name()))
	}
	slices.Sort(want)
	waitFor(t, 10*time.Second, "R3 replica on the restarted server a member of its group", func() bool {
		m := c.servers[down].js.Load().account(globalAccountName).lookup("THREE")
		return m != nil && groupPeersAre(m, want)
	})
	checkReplicasAgree(t, c, "THREE", 20)
	nc.Close()
}

// TestJetStreamClusterWipedR1FromMetaSnapshot (issue 19): the only server
// of an R1 stream loses its storage and catches up the meta group from the
// leader's snapshot. Its replica started as a joiner, waiting for a leader
// that a group of one never has, and the stream was never served again; it
// must found its group again (empty: nobody else held the messages) and
// take publishes.
func TestJetStreamClusterWipedR1FromMetaSnapshot(t *testing.T) {
	setForTest(t, &metaSnapshotEvery, 8)
	c := runTaggedJSCluster(t)
	down := c.metaLeaderIndex() // its survivors must elect another first
	nc, js := jsClient(t, c.servers[0])
	defer nc.Close()
	createStream(t, js, jetstream.StreamConfig{Name: "ONE", Subjects: []string{"one"}, Replicas: 1,
		Placement: &jetstream.Placement{Tags: []string{fmt.Sprintf("node:%d", down)}}})
	for i := 0; i < 5; i++ {
		if _, err := js.Publish(ctx(t), "one", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	name := c.servers[down].Name()
	c.servers[down].Shutdown()
	if err := os.RemoveAll(filepath.Join(c.opts[down].StoreDir, "jetstream")); err != nil {
		t.Fatal(err)
	}
	compactMeta(t, c, js, down, "B")
	c.servers[down] = runServer(t, c.opts[down])

	waitFor(t, 20*time.Second, "R1 stream ONE led by its server again", func() bool {
		st, err := js.Stream(ctx(t), "ONE")
		return err == nil && st.CachedInfo().Cluster != nil && st.CachedInfo().Cluster.Leader == name
	})
	ack, err := js.Publish(ctx(t), "one", []byte("y"))
	if err != nil {
		t.Fatal(err)
	}
	if ack.Sequence != 1 {
		t.Fatalf("publish after the wipe stored at %d, want 1 (the stream starts again empty)", ack.Sequence)
	}
}
