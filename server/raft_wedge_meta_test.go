package server

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats-server/v2/internal/testutil/faultfs"
	"github.com/nats-io/nats-server/v2/internal/vfs"
	"github.com/nats-io/nats.go/jetstream"
)

// TestJetStreamClusterWedgedMetaLeaderReplaced: the meta leader's group
// wedges while its server stays up and answers node liveness, the meta
// group asleep: its disk stalls for the meta log's files (the group
// blocks in the write of a create's entry), or its goroutine blocks
// before it sends anything. A stream create through a follower's server,
// retried as a client does, succeeds again within a bound, and the wedged
// server no longer acts as the meta leader: a create through it is left
// to the new leader, not to its stalled group, nor answered 10008 by it
// because it knows no leader; once the stall ends it follows the new
// leader in a later term, and every server holds the streams created.
func TestJetStreamClusterWedgedMetaLeaderReplaced(t *testing.T) {
	t.Run("disk", func(t *testing.T) { testWedgedMetaLeader(t, wedgeDisk) })
	t.Run("goroutine", func(t *testing.T) { testWedgedMetaLeader(t, wedgeGoroutine) })
}

func testWedgedMetaLeader(t *testing.T, wedge func(fs *faultfs.StallFS, g *raftGroup)) {
	c, fss := metaStallCluster(t, nil)
	victim := c.metaLeaderIndex()
	vs := c.servers[victim]
	via := c.servers[(victim+1)%3]
	_, js := jsClient(t, via)
	createStream(t, js, jetstream.StreamConfig{Name: "BEFORE", Replicas: 3})
	waitFor(t, 15*time.Second, "every group asleep", func() bool { return c.groupsAwake() == "" })
	if c.metaLeaderIndex() != victim {
		t.Skip("the meta leadership moved before the stall") // not expected in a quiet cluster
	}
	jc := vs.js.Load().cluster
	mg, _ := jc.metaGroup()
	oldTerm := mg.softState().Term

	wedge(fss[victim], mg)
	start := time.Now()
	k := 0
	create := func(name string, d time.Duration) error {
		cctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		_, err := js.CreateStream(cctx, jetstream.StreamConfig{Name: name, Replicas: 3})
		return err
	}
	waitFor(t, 15*time.Second, "a stream create through a follower's server accepted", func() bool {
		k++
		return create("AFTER", 500*time.Millisecond) == nil
	})
	accepted := time.Since(start)
	waitFor(t, 15*time.Second, "the wedged server acting as the meta leader no more", func() bool { return !jc.isMetaLeader() })
	stopped := time.Since(start)
	t.Logf("after the stall: a create accepted %v (%d tries), the old leader acting as one no more %v", accepted, k, stopped)
	// A stream create through the wedged server is left to the new
	// leader, which hears it too: the wedged server, knowing no leader
	// (its stalled group heard of none), does not answer it 10008 first.
	_, jsv := jsClient(t, vs)
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_, err := jsv.CreateStream(cctx, jetstream.StreamConfig{Name: "VIA", Replicas: 3})
	cancel()
	if err != nil {
		t.Fatalf("a create through the wedged server: %v", err)
	}
	if n := vs.raft.elections.deposed.Load(); n != 1 {
		t.Fatalf("%s deposed %d leaderships, want 1", vs.Name(), n)
	}

	fss[victim].Lift()
	waitFor(t, 20*time.Second, "the old meta leader follows in a later term", func() bool {
		st := mg.softState()
		return !jc.isMetaLeader() && st.Role == raft.Follower && st.Term > oldTerm && st.Lead != raft.None
	})
	_, js3 := jsClient(t, vs)
	createStream(t, js3, jetstream.StreamConfig{Name: "LATER", Replicas: 3})
	waitFor(t, 20*time.Second, "every server holds every stream", func() bool {
		for _, s := range c.servers {
			for _, name := range []string{"BEFORE", "AFTER", "VIA", "LATER"} {
				if s.js.Load().cluster.assignment(globalAccountName, name) == nil {
					return false
				}
			}
		}
		return true
	})
	if j := vs.jszWith(true); j.RaftDeposed != 1 {
		t.Fatalf("/jsz?raft=true: raft_deposed %d", j.RaftDeposed)
	}
}

// metaStallCluster starts a 3-server cluster (tweak: more options) whose
// servers' meta logs sit on a StallFS each, lifted before they shut down.
func metaStallCluster(t *testing.T, tweak func(i int, o *Options)) (*jsTestCluster, []*faultfs.StallFS) {
	t.Helper()
	sep := string(os.PathSeparator)
	fss := make([]*faultfs.StallFS, 3)
	c := runJSClusterWith(t, 3, func(i int, o *Options) {
		if tweak != nil {
			tweak(i, o)
		}
		fss[i] = &faultfs.StallFS{FS: vfs.Default, Match: sep + metaGroupName + sep}
		o.fsys = fss[i]
	})
	t.Cleanup(func() {
		for _, f := range fss {
			f.Lift() // before the servers shut down
		}
	})
	return c, fss
}
