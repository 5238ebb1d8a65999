package server

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// A stream's replica count can be changed as with nats-server (`nats
// stream edit --replicas`): R3 → R5 adds two servers that catch up, R5 → R3
// removes two (never the leader), likewise down to R1 and back, and the
// stream keeps every message and keeps accepting publishes throughout.
func TestJetStreamClusterScaleReplicas(t *testing.T) {
	c := runJSCluster(t, 5)
	_, js := jsClient(t, c.servers[0])
	st := createStream(t, js, jetstream.StreamConfig{Name: "SC", Subjects: []string{"sc.>"}, Replicas: 3})
	sent := 0
	publish := func(n int) {
		for range n {
			if _, err := js.Publish(ctx(t), fmt.Sprintf("sc.%d", sent%7), []byte("x")); err != nil {
				t.Fatalf("publish %d: %v", sent, err)
			}
			sent++
		}
	}
	publish(100)
	scale := func(n int) {
		t.Helper()
		cfg := st.CachedInfo().Config
		cfg.Replicas = n
		info, err := js.UpdateStream(ctx(t), cfg)
		if err != nil {
			t.Fatalf("scaling to %d: %v", n, err)
		}
		if info.CachedInfo().Config.Replicas != n {
			t.Fatalf("scaled to %d, config says %d", n, info.CachedInfo().Config.Replicas)
		}
		defer func() {
			if t.Failed() {
				si, err := st.Info(ctx(t))
				if err == nil {
					t.Logf("config R%d, cluster %+v", si.Config.Replicas, si.Cluster)
					for _, p := range si.Cluster.Replicas {
						t.Logf("replica %+v", *p)
					}
				}
				t.Logf("%s", c.groupViews("SC"))
			}
		}()
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
			return si.Config.Replicas == n
		})
	}

	scale(5)
	publish(50)
	checkReplicasAgree(t, c, "SC", uint64(sent))
	leader := c.servers[0].js.Load().cluster.streamLeader(globalAccountName, "SC")

	scale(3)
	publish(50)
	checkReplicasAgree(t, c, "SC", uint64(sent))
	sa := c.servers[0].js.Load().cluster.assignment(globalAccountName, "SC")
	if len(sa.Peers) != 3 || !slices.Contains(sa.Peers, leader) {
		t.Fatalf("placement after scaling down: %v (leader was %s)", sa.Peers, leader)
	}
	if n := len(c.replicas("SC")); n != 3 {
		t.Fatalf("%d servers still hold a replica after scaling down to 3", n)
	}

	// Any update's answer shows the configuration it set, although the
	// replicas apply it from the stream's log a moment later.
	cfg := st.CachedInfo().Config
	cfg.MaxMsgs = 100000
	if info, err := js.UpdateStream(ctx(t), cfg); err != nil || info.CachedInfo().Config.MaxMsgs != 100000 {
		t.Fatalf("update answered %v", err)
	}

	// Down to one replica and back up.
	scale(1)
	publish(20)
	checkReplicasAgree(t, c, "SC", uint64(sent))
	scale(3)
	publish(20)
	checkReplicasAgree(t, c, "SC", uint64(sent))

}

// A scale computed against a placement that changed before it applied
// (a peer removal in between) is refused at apply time instead of undoing
// the change; a plain update never changes the replica count.
func TestJetStreamClusterScaleAgainstStalePlacement(t *testing.T) {
	c := runJSCluster(t, 5)
	_, js := jsClient(t, c.servers[0])
	st := createStream(t, js, jetstream.StreamConfig{Name: "SP", Subjects: []string{"sp.>"}, Replicas: 3})
	meta := c.waitMetaLeader()
	jc := meta.js.Load().cluster
	old := jc.assignment(globalAccountName, "SP")
	stale := *old
	stale.Config.Replicas = 4
	stale.Peers = append(slices.Clone(old.Peers), "nobody")
	jc.proposeMeta(&metaEntry{Op: "upd", SA: &stale, Origin: meta.Name(), Scale: true,
		From: []string{"not", "the", "placement"}}, func(*ApiError) {})
	// A plain update proposed after it applies after it.
	cfg := st.CachedInfo().Config
	cfg.Description = "after"
	if _, err := js.UpdateStream(ctx(t), cfg); err != nil {
		t.Fatal(err)
	}
	cur := jc.assignment(globalAccountName, "SP")
	if !slices.Equal(cur.Peers, old.Peers) || cur.Config.Replicas != 3 || cur.Config.Description != "after" {
		t.Fatalf("after a stale scale and an update: peers %v, R%d, %q", cur.Peers, cur.Config.Replicas, cur.Config.Description)
	}
}

// TestLeavingSteps walks the decisions of a replica leaving the placement.
func TestLeavingSteps(t *testing.T) {
	a, b, c := raftID("A"), raftID("B"), raftID("C")
	t0 := time.Now()
	st := func(lead raft.ID, last uint64, peers ...raft.ID) raft.Status {
		s := raft.Status{ID: a, LastIndex: last, Peers: peers}
		s.Lead = lead
		return s
	}
	elsewhere := &streamAssignment{Peers: []string{"B", "C"}}
	here := &streamAssignment{Peers: []string{"A", "B"}}
	cases := []struct {
		name    string
		steps   []raft.Status
		cur     *streamAssignment
		leading bool
		other   bool
		after   time.Duration // between steps
		want    leaveStep
	}{
		{"follower still a member waits", []raft.Status{st(b, 5, a, b, c)}, elsewhere, false, true, 0, leaveWait},
		{"follower out of the membership stops", []raft.Status{st(b, 5, b, c)}, elsewhere, false, true, 0, leaveStop},
		{"leader with placed members reconciles", []raft.Status{st(a, 5, a, b, c)}, elsewhere, true, false, 0, leaveReconcile},
		{"leader of no placed server stops", []raft.Status{st(a, 5, a)}, elsewhere, true, false, 0, leaveStop},
		{"shunned after no leader for long", []raft.Status{st(raft.None, 5, a, b, c), st(raft.None, 5, a, b, c)}, elsewhere, false, true, 3 * time.Second, leaveStop},
		{"no leader but none known elsewhere waits", []raft.Status{st(raft.None, 5, a, b, c), st(raft.None, 5, a, b, c)}, elsewhere, false, false, 3 * time.Second, leaveWait},
		{"empty joiner that never heard a leader stops", []raft.Status{st(raft.None, 0), st(raft.None, 0)}, elsewhere, false, false, 11 * time.Second, leaveStop},
		{"placed here again before leaving stays", []raft.Status{st(b, 5, a, b, c)}, here, false, true, 0, leaveStay},
		{"placed here again after removal rejoins", []raft.Status{st(b, 5, b, c)}, here, false, true, 0, leaveRejoin},
		{"placed here again while shunned rejoins", []raft.Status{st(raft.None, 5, a, b, c), st(raft.None, 5, a, b, c)}, here, false, true, 3 * time.Second, leaveRejoin},
	}
	for _, tc := range cases {
		lv := leaving{me: a, start: t0}
		now := t0
		var got leaveStep
		for _, s := range tc.steps {
			got = lv.next(s, tc.cur, tc.cur == here, tc.leading, tc.other, now)
			now = now.Add(tc.after)
		}
		if got != tc.want {
			t.Errorf("%s: step %d, want %d", tc.name, got, tc.want)
		}
	}
}
