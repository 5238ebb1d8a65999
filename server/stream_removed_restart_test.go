package server

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// A replica removed from its stream's group (STREAM.PEER.REMOVE) stays
// removed across restarts: the remaining members' raft groups keep the
// membership without it, and the removed server starts no replica.

func TestJetStreamClusterRemovedReplicaStaysRemoved(t *testing.T) {
	testRemovedStaysRemoved(t, false)
}

// The removed server was down while it was removed.
func TestJetStreamClusterRemovedWhileDownStaysRemoved(t *testing.T) {
	testRemovedStaysRemoved(t, true)
}

func testRemovedStaysRemoved(t *testing.T, down bool) {
	setForTest(t, &snapshotEvery, 100)
	c := runJSCluster(t, 3)
	nc, js := jsClient(t, c.servers[0])
	st := createStream(t, js, jetstream.StreamConfig{Name: "RM", Subjects: []string{"rm.>"}, Replicas: 3, Storage: jetstream.FileStorage})
	leader := st.CachedInfo().Cluster.Leader
	k := -1
	for i, s := range c.servers {
		if s.Name() != leader {
			k = i
		}
	}
	victim := c.servers[k].Name()
	publish := func(n int) {
		for i := range n {
			waitFor(t, 10*time.Second, "a publish acknowledged", func() bool {
				_, err := js.Publish(ctx(t), fmt.Sprintf("rm.%d", i%5), []byte("x"))
				return err == nil
			})
		}
	}
	publish(50)
	if down {
		c.servers[k].Shutdown()
		// A meta request sent while the dead server is still believed to lead
		// the meta group is dropped unanswered (as in nats-server): wait for the
		// new meta leader first.
		c.waitMetaLeader()
	}
	resp, err := nc.Request("$JS.API.STREAM.PEER.REMOVE.RM", []byte(`{"peer":"`+victim+`"}`), 5*time.Second)
	if err != nil || !strings.Contains(string(resp.Data), `"success":true`) {
		t.Fatalf("peer remove: %v %v", err, resp) // resp is nil on a timeout
	}
	publish(250) // past a snapshot: the removal is compacted into it
	nc.Close()
	if down {
		c.servers[k] = runServer(t, c.opts[k])
	}
	c.logViewsOnFailure(t, "RM")
	want := []raft.ID{}
	for _, s := range c.servers {
		if s.Name() != victim {
			want = append(want, raftID(s.Name()))
		}
	}
	slices.Sort(want)
	check := func(when string) {
		t.Helper()
		waitFor(t, 20*time.Second, when+": the two remaining members, without "+victim, func() bool {
			reps := c.replicas("RM")
			if len(reps) != 2 {
				return false
			}
			for _, m := range reps {
				if m.jsa.js.srv.Name() == victim || !groupPeersAre(m, want) {
					return false
				}
			}
			return true
		})
	}
	check("after the removal")
	c.servers[k].Shutdown()
	c.servers[k] = runServer(t, c.opts[k])
	c.waitMetaLeader()
	check("after the removed server restarted")
	c.restartAll(t)
	check("after every server restarted")
	nc, js = jsClient(t, c.servers[k])
	if _, err := js.Publish(ctx(t), "rm.x", []byte("y")); err != nil {
		t.Fatalf("publish after the restarts: %v", err)
	}
}

// groupPeersAre reports whether m's raft group runs with exactly the
// members want (sorted).
func groupPeersAre(m *stream, want []raft.ID) bool {
	g := m.groupNow()
	if g == nil {
		return false
	}
	peers := g.statusSnapshot().Peers
	slices.Sort(peers)
	return slices.Equal(peers, want)
}
