package server

import (
	"fmt"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// recoveringOf reports, from the group goroutine, whether the replica's
// raft node is recovering (raft.Config.Recovering) and its status.
func recoveringOf(t *testing.T, mset *stream) (bool, raft.Status) {
	t.Helper()
	mset.mu.Lock()
	g := mset.group
	mset.mu.Unlock()
	type answer struct {
		rec bool
		st  raft.Status
	}
	ch := make(chan answer, 1)
	g.control(func(n *raft.Node) { ch <- answer{n.Recovering(), n.Status()} })
	select {
	case a := <-ch:
		return a.rec, a.st
	case <-time.After(10 * time.Second):
		t.Fatal("the group did not answer")
	}
	return false, raft.Status{}
}

// TestJetStreamClusterShunnedRejoinKeepsAcks: a replica taken out of the
// placement learns its removal from the leader, which appended it, and is
// placed here again: it replaces its replica with one that joins again (as
// one that heard no leader for replicaShunnedAfter does: "shunned"). Here the removal cannot commit (the third member is down), so it
// is still a member, and the entries acknowledged before were committed
// with its acknowledgement alone. Deleting its log made it a member with
// an empty log and no vote, which elected the lagging member once the
// leader was gone, and the acknowledged messages were lost. Its log is
// retired instead (stream_retire.go): the new replica recovers, voting
// only for a log at least as up to date as the one it discarded.
//
// The leaver's next look is held while the placement comes back, as when
// the re-placement applies before that look: the replica then knows both
// its (uncommitted) removal and its return, and rejoins. A shunned replica
// (no removal known, no leader heard for 2 s) rejoins the same way
// (leaving.next, rejoinReplica).
func TestJetStreamClusterShunnedRejoinKeepsAcks(t *testing.T) {
	var target atomic.Pointer[Server]
	holding, release := make(chan struct{}), make(chan struct{})
	var held atomic.Bool
	var oldLast uint64 // the log's last index as the leaver is held
	testHookLeaveStep = func(l *leaver) {
		if l.jc.js.srv != target.Load() || l.sa.Config.Name != "SH" || held.Load() {
			return
		}
		// Hold it once it knows its removal (its leader appended it and
		// sent it) or heard no leader for a while.
		st := l.g.statusSnapshot()
		removed := len(st.Peers) > 0 && !slices.Contains(st.Peers, l.lv.me)
		if !removed && (l.lv.leaderless.IsZero() || l.jc.js.srv.clock.Since(l.lv.leaderless) < replicaShunnedAfter/2) {
			return
		}
		held.Store(true)
		oldLast = st.LastIndex
		close(holding)
		<-release
	}
	t.Cleanup(func() { testHookLeaveStep = nil })
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	st := createStream(t, js, jetstream.StreamConfig{Name: "SH", Subjects: []string{"sh.>"}, Replicas: 3})
	leader := st.CachedInfo().Cluster.Leader
	var a, b, cc *Server
	ai, bi := -1, -1
	for i, s := range c.servers {
		switch {
		case s.Name() == leader:
			a, ai = s, i
		case b == nil:
			b, bi = s, i
		default:
			cc = s
		}
	}
	target.Store(cc)
	_, jsA := jsClient(t, a)
	sent := 0
	publish := func(n int) {
		t.Helper()
		for range n {
			if _, err := jsA.Publish(ctx(t), fmt.Sprintf("sh.%d", sent), []byte("x")); err != nil {
				t.Fatalf("publish %d: %v", sent, err)
			}
			sent++
		}
	}
	publish(10)
	c.waitAllApplied(t, "SH", 3, 10, 10*time.Second)
	b.Shutdown()
	publish(20) // acknowledged by the leader and cc only

	place := func(peers ...*Server) { t.Helper(); placeStream(t, c, cc, "SH", peers...) }
	old := c.replicaOn(cc, "SH")
	place(a, b) // a appends cc's removal, which b's absence keeps from committing
	select {
	case <-holding:
	case <-time.After(15 * time.Second):
		t.Fatalf("%s's leaver heard a leader all along", cc.Name())
	}
	place(a, b, cc)
	close(release)
	waitFor(t, 10*time.Second, "the replica replaced", func() bool {
		m := c.replicaOn(cc, "SH")
		if m == nil || m == old {
			return false
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.group != nil
	})
	rejoined := c.replicaOn(cc, "SH")
	// Recovering, or caught up already past what it held (a leader sent
	// it its log).
	if rec, st := recoveringOf(t, rejoined); !rec && st.LastIndex < oldLast {
		t.Errorf("the rejoined replica is an ordinary member (term %d, last %d; it held %d): it votes as if it never held them", st.Term, st.LastIndex, oldLast)
	}

	// The leader goes, the lagging member comes back and meets cc.
	a.Shutdown()
	c.servers[bi] = runServer(t, c.opts[bi])
	b = c.servers[bi]
	// A window for b to campaign with cc's vote, were cc to grant it
	// (many election timeouts): a leader elected with b's log holds 10
	// messages, and the leader's log is truncated to it when it returns.
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if m := c.replicaOn(b, "SH"); m != nil && m.isLeader() {
			t.Logf("%s leads with the lagging log", b.Name())
			break
		}
	}
	c.servers[ai] = runServer(t, c.opts[ai])
	checkReplicasAgree(t, c, "SH", uint64(sent))
}

// placeStream has the meta leader propose the placement peers for stream
// name and waits until watch applied one that places it as peers do. Only
// the leader's proposal is taken (a follower's is refused): proposed by the
// stream's leader, it was lost whenever that server did not lead the meta
// group too, as the per-group election jitter makes likely once a server
// was shut down.
func placeStream(t *testing.T, c *jsTestCluster, watch *Server, name string, peers ...*Server) {
	t.Helper()
	from := c.waitMetaLeader()
	jc := from.js.Load().cluster
	cur := jc.assignment(globalAccountName, name)
	next := *cur
	next.Peers = nil
	for _, p := range peers {
		next.Peers = append(next.Peers, p.Name())
	}
	next.Config.Replicas = len(peers)
	jc.proposeMeta(&metaEntry{Op: "upd", SA: &next, Origin: from.Name(), Scale: true, From: cur.Peers}, func(*ApiError) {})
	waitFor(t, 10*time.Second, fmt.Sprintf("placement %v on %s", next.Peers, watch.Name()), func() bool {
		sa := watch.js.Load().cluster.assignment(globalAccountName, name)
		return sa != nil && slices.Equal(sa.Peers, next.Peers)
	})
}

// TestJetStreamClusterLeftLogRetired: a replica that left the placement
// keeps its log (stopReplicaIf); a later placement that still leaves the
// server out retires it (stream_retire.go) rather than deleting it: the
// term, the vote and the discarded log's last position stay in the group
// directory, so a replica started there again recovers instead of voting
// as a member that never acknowledged anything.
func TestJetStreamClusterLeftLogRetired(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	st := createStream(t, js, jetstream.StreamConfig{Name: "LR", Subjects: []string{"lr.>"}, Replicas: 3})
	leader := st.CachedInfo().Cluster.Leader
	var a, b, cc *Server
	for _, s := range c.servers {
		switch {
		case s.Name() == leader:
			a = s
		case b == nil:
			b = s
		default:
			cc = s
		}
	}
	_, jsA := jsClient(t, a)
	for i := range 10 {
		if _, err := jsA.Publish(ctx(t), fmt.Sprintf("lr.%d", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	c.waitAllApplied(t, "LR", 3, 10, 10*time.Second)
	_, held := recoveringOf(t, c.replicaOn(cc, "LR"))
	placeStream(t, c, cc, "LR", a, b)
	waitFor(t, 15*time.Second, "the replica that left stopped", func() bool { return c.replicaOn(cc, "LR") == nil })
	jsC := cc.js.Load()
	dir := jsC.groupDir(jsC.cluster.assignment(globalAccountName, "LR"))
	if !jsC.hasGroupLog(dir) {
		t.Fatalf("the replica that left did not keep its log")
	}
	placeStream(t, c, cc, "LR", b, a) // the server still out
	marker := filepath.Join(dir, repairMarker)
	waitFor(t, 10*time.Second, "the kept log retired or deleted", func() bool {
		return jsC.exists(marker) || !jsC.exists(dir)
	})
	data, err := vfs.ReadFile(jsC.fs, marker)
	if err != nil {
		t.Fatalf("the kept log was deleted, not retired: %v", err)
	}
	rs := decodeRepair(data)
	if rs.floor.Index < held.LastIndex || rs.term < held.Term {
		t.Fatalf("retired with floor %+v term %d; the log held index %d in term %d", rs.floor, rs.term, held.LastIndex, held.Term)
	}
}
