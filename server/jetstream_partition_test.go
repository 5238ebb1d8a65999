package server

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// partition cuts every route between the servers of a and those of b, both
// ways, and keeps them from reconnecting until heal.
func partition(a, b []*Server) {
	cut := func(from, to []*Server) {
		blocked := map[string]bool{}
		for _, s := range to {
			blocked[s.Name()] = true
		}
		for _, s := range from {
			s.blockedRoutes.Store(&blocked)
			for _, r := range s.routeList() {
				if blocked[r.remote.Name] {
					r.c.closeNow(RouteRemoved)
				}
			}
		}
	}
	cut(a, b)
	cut(b, a)
}

func heal(servers []*Server) {
	for _, s := range servers {
		s.blockedRoutes.Store(nil)
	}
}

// TestJetStreamClusterPartitionedLeader isolates an R3 stream's leader.
// The majority elects another leader and goes on; nothing published
// through the isolated side is acknowledged unless it is stored; after the
// partition heals the old leader discards what it could not commit and
// every replica ends with the same state, holding every acknowledged
// message.
func TestJetStreamClusterPartitionedLeader(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	st := createStream(t, js, jetstream.StreamConfig{Name: "PART", Subjects: []string{"part.>"}, Replicas: 3})
	leader := st.CachedInfo().Cluster.Leader
	var minority, majority []*Server
	for _, s := range c.servers {
		if s.Name() == leader {
			minority = append(minority, s)
		} else {
			majority = append(majority, s)
		}
	}
	ncMin, _ := jsClient(t, minority[0])
	ncMaj, _ := jsClient(t, majority[0])
	acked := map[uint64]string{}
	publish := func(nc *nats.Conn, payload string, timeout time.Duration) bool {
		resp, err := nc.Request("part.x", []byte(payload), timeout)
		if err != nil {
			return false
		}
		var ack casAck
		if jsonErr := json.Unmarshal(resp.Data, &ack); jsonErr != nil || ack.Error != nil || ack.Seq == 0 {
			return false
		}
		if prev, dup := acked[ack.Seq]; dup {
			t.Fatalf("sequence %d acknowledged for %q and %q", ack.Seq, prev, payload)
		}
		acked[ack.Seq] = payload
		return true
	}
	// Retries cover the moment after creation when the leader's interest
	// has not reached every server yet (no responders).
	publishRetrying := func(nc *nats.Conn, payload string) {
		for attempt := 0; attempt < 50; attempt++ {
			if publish(nc, payload, time.Second) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("%s never acknowledged", payload)
	}
	for i := 0; i < 10; i++ {
		publishRetrying(ncMaj, fmt.Sprintf("before-%d", i))
	}

	partition(minority, majority)
	minorOK := 0
	for i := 0; i < 20; i++ { // through the isolated leader's server
		if publish(ncMin, fmt.Sprintf("minority-%d", i), 200*time.Millisecond) {
			minorOK++
		}
	}
	waitFor(t, 15*time.Second, "a leader on the majority side", func() bool {
		l, code := infoOutcome(t, ncMaj, "PART")
		return code == 0 && l != "" && l != leader
	})
	for i := 0; i < 20; i++ {
		publishRetrying(ncMaj, fmt.Sprintf("majority-%d", i))
	}

	heal(c.servers)
	waitForMesh(t, c.servers)
	checkReplicasAgree(t, c, "PART", uint64(len(acked)))
	for seq, payload := range acked {
		var m *jetstream.RawStreamMsg
		var err error
		waitFor(t, 5*time.Second, "the message (10008 while leaders re-announce)", func() bool {
			m, err = st.GetMsg(ctx(t), seq)
			return apiCode(err) != 10008
		})
		if err != nil {
			t.Fatalf("acknowledged seq %d (%q): %v", seq, payload, err)
		}
		if string(m.Data) != payload {
			t.Fatalf("acknowledged seq %d holds %q, not %q", seq, m.Data, payload)
		}
	}
	seqs := make([]uint64, 0, len(acked))
	for s := range acked {
		seqs = append(seqs, s)
	}
	slices.Sort(seqs)
	t.Logf("%d acknowledged (%d through the isolated leader), last seq %d", len(acked), minorOK, seqs[len(seqs)-1])
}

// TestJetStreamClusterSnapshotsStaggered: replicas take their snapshots at
// different indexes (encoding one costs CPU and disk reads), so a commit
// never waits on a majority that is busy encoding at once.
func TestJetStreamClusterSnapshotsStaggered(t *testing.T) {
	setForTest(t, &snapshotEvery, 64)
	c := runJSCluster(t, 3)
	nc, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "STAG", Subjects: []string{"stag"}, Replicas: 3})
	// Each publish is applied everywhere before the next: a replica
	// decides to snapshot after each batch it applies, so one that lagged
	// and applied a long batch at once could pass its own point and the
	// next replica's in one go (staggering is per index, not per batch).
	for i := 0; i < 400; i++ {
		if ack, err := clusterCASPublish(nc, nats.NewMsg("stag")); err != nil || ack.Error != nil {
			t.Fatalf("publish: %+v %v", ack, err)
		}
		waitFor(t, 5*time.Second, "every replica applied the publish", func() bool {
			var idx []uint64
			for _, m := range c.replicas("STAG") {
				m.mu.Lock()
				idx = append(idx, m.lastIndex)
				m.mu.Unlock()
			}
			return len(idx) == 3 && idx[0] == idx[1] && idx[1] == idx[2]
		})
	}
	checkReplicasAgree(t, c, "STAG", 400)
	var followers []uint64
	for _, m := range c.replicas("STAG") {
		m.mu.Lock()
		idx, lead := m.snapIndex, m.leader
		m.mu.Unlock()
		if idx == 0 {
			t.Fatalf("%s never took a snapshot", m.jsa.js.srv.Name())
		}
		if !lead {
			followers = append(followers, idx)
		}
	}
	if len(followers) != 2 || followers[0] == followers[1] {
		t.Fatalf("followers snapshotted at the same index: %v", followers)
	}
}
