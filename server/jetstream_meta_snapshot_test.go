package server

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestJetStreamClusterMetaSnapshot: the meta group compacts its log; a
// server that was down while streams came and went installs the snapshot
// and ends up with exactly the replicas it is a peer of, caught up.
func TestJetStreamClusterMetaSnapshot(t *testing.T) {
	setForTest(t, &metaSnapshotEvery, 8)
	c := runJSCluster(t, 3)
	// The server stopped below leads the meta group: its survivors elect
	// another before the creates that follow (the failover runs every time).
	down := c.metaLeaderIndex()
	nc, js := jsClient(t, c.notMetaLeader(c.servers[down]))
	createStream(t, js, jetstream.StreamConfig{Name: "KEEP", Subjects: []string{"keep"}, Replicas: 3})
	createStream(t, js, jetstream.StreamConfig{Name: "GONE", Subjects: []string{"gone"}, Replicas: 3})
	c.servers[down].Shutdown()
	// A meta request sent while the dead server is still believed to lead
	// the meta group is dropped unanswered (as in nats-server): wait for the
	// new meta leader first.
	c.waitMetaLeader()
	for i := 0; i < 10; i++ {
		name := fmt.Sprintf("T%d", i)
		if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: name, Subjects: []string{name}, Replicas: 3}); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if err := js.DeleteStream(ctx(t), name); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := js.DeleteStream(ctx(t), "GONE"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if ack, err := clusterCASPublish(nc, nats.NewMsg("keep")); err != nil || ack.Error != nil {
			t.Fatalf("publish: %+v %v", ack, err)
		}
		if ack, err := clusterCASPublish(nc, nats.NewMsg("T9")); err != nil || ack.Error != nil {
			t.Fatalf("publish: %+v %v", ack, err)
		}
	}
	for _, s := range c.except(down) {
		waitFor(t, 5*time.Second, "meta log compacted on "+s.Name(), func() bool {
			g := s.js.Load().cluster.meta
			first, _ := g.log.FirstIndex()
			return first > 1
		})
	}
	c.servers[down] = runServer(t, c.opts[down])
	checkReplicasAgree(t, c, "KEEP", 20)
	checkReplicasAgree(t, c, "T9", 20)
	want := map[string]bool{"KEEP": true, "T1": true, "T3": true, "T5": true, "T7": true, "T9": true}
	waitFor(t, 10*time.Second, "the restarted server has exactly the live replicas", func() bool {
		jsa := c.servers[down].js.Load().account(globalAccountName)
		jsa.mu.RLock()
		defer jsa.mu.RUnlock()
		if len(jsa.streams) != len(want) {
			return false
		}
		for name := range jsa.streams {
			if !want[name] {
				return false
			}
		}
		return true
	})
	// And it restarts again from its own snapshot, even when enabling the
	// accounts takes a while: the snapshot restored at start used to skip
	// the replicas of accounts not enabled yet, and none started later.
	c.servers[down].Shutdown()
	testHookEnableAccounts = func() { time.Sleep(100 * time.Millisecond) }
	c.servers[down] = runServer(t, c.opts[down])
	testHookEnableAccounts = nil
	checkReplicasAgree(t, c, "KEEP", 20)
	// The restarted server may have led the meta group again before it
	// stopped: the listing below is a meta call.
	c.waitMetaLeader()
	names := 0
	for name := range js.StreamNames(ctx(t)).Name() {
		if !want[name] {
			t.Fatalf("unexpected stream %s", name)
		}
		names++
	}
	if names != len(want) {
		t.Fatalf("%d streams listed, want %d", names, len(want))
	}
}

// TestMetaSnapshotEncodedOffTheGroup: the meta group only lists the
// assignments when it snapshots; sorting and encoding them run on the
// snapshot's goroutine (encoding 8,000 assignments on the group held every
// create behind it for 300-660 ms each 1,024 entries). The snapshot still
// holds exactly the assignments at its index, in order, though more were
// applied before it was encoded.
func TestMetaSnapshotEncodedOffTheGroup(t *testing.T) {
	jc := &jsCluster{streams: map[string]map[string]*streamAssignment{}}
	add := func(acc, name string) {
		if jc.streams[acc] == nil {
			jc.streams[acc] = map[string]*streamAssignment{}
		}
		sa := &streamAssignment{Account: acc, Peers: []string{"S1", "S2", "S3"},
			Config: StreamConfig{Name: name, Subjects: []string{name + ".>"}, Replicas: 3, Storage: FileStorage}}
		jc.streams[acc][name] = sa
		jc.countPlacedLocked(sa, 1)
	}
	const n = 40000
	for i := 0; i < n; i++ {
		add([]string{"A", "B"}[i%2], fmt.Sprintf("s%05d", i))
	}
	m := &metaSM{jc: jc, applied: n} // due: as many entries as assignments (metaSnapshotDue)
	t0 := time.Now()
	index, encode, due := m.wantSnapshot()
	onGroup := time.Since(t0)
	if !due || index != n {
		t.Fatalf("wantSnapshot: index %d due %v", index, due)
	}
	add("A", "later")                 // applied after the snapshot's index
	delete(jc.streams["B"], "s00001") // a delete replaces nothing in place
	t1 := time.Now()
	p, err := encode()
	encoding := time.Since(t1)
	if err != nil {
		t.Fatal(err)
	}
	var snap metaSnapshot
	if err := json.Unmarshal(p.data, &snap); err != nil {
		t.Fatal(err)
	}
	if len(snap.Streams) != n {
		t.Fatalf("snapshot holds %d assignments, want the %d at its index", len(snap.Streams), n)
	}
	for i, sa := range snap.Streams {
		want := fmt.Sprintf("s%05d", i%(n/2)*2+i/(n/2))
		if acc := []string{"A", "B"}[i/(n/2)]; sa.Account != acc || sa.Config.Name != want {
			t.Fatalf("entry %d is %s/%s, want %s/%s", i, sa.Account, sa.Config.Name, acc, want)
		}
	}
	// Listing 40,000 pointers against encoding 40,000 assignments: well
	// over ten times apart; five leaves room for a loaded machine.
	if onGroup*5 > encoding {
		t.Fatalf("wantSnapshot took %v on the group, encoding %v: the group encodes", onGroup, encoding)
	}
}

// A meta snapshot is due only once the entries since the last one are as
// many as the assignments it would hold: with 10,000 streams, a snapshot
// every 1,024 creates encoded all of them each time, so the 10,000th create
// cost more than the first. Encoding stays O(1) per applied entry: over
// 20,000 creates the assignments encoded are at most about twice the
// entries (with a snapshot every 1,024, some 200,000).
func TestMetaSnapshotIntervalGrowsWithAssignments(t *testing.T) {
	if !metaSnapshotDue(metaSnapshotEvery, 10) || metaSnapshotDue(metaSnapshotEvery-1, 10) {
		t.Fatalf("with few assignments a snapshot is due every %d entries", metaSnapshotEvery)
	}
	if metaSnapshotDue(metaSnapshotEvery, 10000) || !metaSnapshotDue(10000, 10000) {
		t.Fatal("with 10,000 assignments a snapshot is due after 10,000 entries, not before")
	}
	jc := &jsCluster{streams: map[string]map[string]*streamAssignment{"A": {}}}
	m := &metaSM{jc: jc}
	encoded := 0
	const creates = 20000
	for i := 0; i < creates; i++ {
		sa := &streamAssignment{Account: "A"}
		jc.streams["A"][fmt.Sprint("s", i)] = sa
		jc.countPlacedLocked(sa, 1)
		m.applied++
		if _, _, due := m.wantSnapshot(); due {
			encoded += len(jc.streams["A"])
		}
	}
	if encoded > 2*creates+int(metaSnapshotEvery) {
		t.Fatalf("%d assignments encoded for %d creates", encoded, creates)
	}
}
