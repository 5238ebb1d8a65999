package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats-server/v2/internal/testutil/faultfs"
	"github.com/nats-io/nats-server/v2/internal/vfs"
	"github.com/nats-io/nats.go/jetstream"
)

// TestJetStreamClusterWedgedQuietLeaderReplaced: a quiet R3 stream whose
// leader's group wedges while the leader's server stays up and answers
// node liveness: its disk stalls for that stream's files (the group's
// goroutine blocks in a write of its log, after its pipelined append
// woke the followers), or its goroutine blocks before it sends anything
// (the followers sleep on). Publishes through a follower's server are
// accepted again within a bound, and every one is from the moment the
// wedged server stopped serving the stream; once the stall ends, the old
// leader follows the new one, the replicas agree and every acknowledged
// message is stored. "short": the stall ends as soon as the leadership
// was deposed, before the followers' election timeout: the old leader,
// still leading its term, resigns. "idle sync": with a sync_interval,
// only the disk's syncs stall: a publish is taken, and the group blocks
// in the fsync of its log as it falls asleep (raftGroup.asleep).
func TestJetStreamClusterWedgedQuietLeaderReplaced(t *testing.T) {
	disk, goroutine := wedgeDisk, wedgeGoroutine
	t.Run("disk", func(t *testing.T) { testWedgedQuietLeader(t, disk, false, false) })
	t.Run("goroutine", func(t *testing.T) { testWedgedQuietLeader(t, goroutine, false, false) })
	t.Run("short", func(t *testing.T) { testWedgedQuietLeader(t, goroutine, true, false) })
	t.Run("idle sync", func(t *testing.T) { testWedgedQuietLeader(t, disk, false, true) })
}

// wedgeDisk wedges a group by stalling its files' disk; wedgeGoroutine
// by blocking its goroutine in a control call until the stall is lifted
// (fs's gate), before it sends anything.
func wedgeDisk(fs *faultfs.StallFS, _ *raftGroup) { fs.Stall() }

func wedgeGoroutine(fs *faultfs.StallFS, g *raftGroup) {
	fs.Stall()
	gate := fs.Gate()
	g.control(func(*raft.Node) { <-gate })
}

func testWedgedQuietLeader(t *testing.T, wedge func(fs *faultfs.StallFS, g *raftGroup), short, syncs bool) {
	const name = "WEDGE"
	fss := make([]*faultfs.StallFS, 3)
	c := runJSClusterWith(t, 3, func(i int, o *Options) {
		fss[i] = &faultfs.StallFS{FS: vfs.Default, Match: name, SyncsOnly: syncs}
		o.fsys = fss[i]
		if syncs {
			o.SyncInterval = time.Minute // writes are fsynced later, or as the group falls asleep
		}
	})
	t.Cleanup(func() {
		for _, f := range fss {
			f.Lift() // before the servers shut down
		}
	})
	_, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: name, Subjects: []string{"w"}, Replicas: 3})
	acked := map[string]uint64{} // msg id: sequence
	pub := func(js jetstream.JetStream, id string, d time.Duration) error {
		pctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		ack, err := js.Publish(pctx, "w", []byte(id), jetstream.WithMsgID(id))
		if err == nil {
			acked[id] = ack.Sequence
		}
		return err
	}
	// pubRetry publishes as a client that retries with the same id does
	// (the stream dedupes): one sent as the old leader's server dropped
	// its subscription may reach it and go unanswered.
	pubRetry := func(js jetstream.JetStream, id string) {
		t.Helper()
		var err error
		for range 3 {
			if err = pub(js, id, 2*time.Second); err == nil {
				return
			}
		}
		t.Fatalf("publish %s: %v", id, err)
	}
	pubRetry(js, "m0")
	waitFor(t, 15*time.Second, "every group asleep", func() bool { return c.groupsAwake() == "" })
	victim := c.waitLeaderIndex(t, name)
	old := c.replicaOn(c.servers[victim], name)
	oldTerm := old.groupNow().softState().Term
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s:\n%s", name, c.raftViews(name))
		}
	})

	wedge(fss[victim], old.groupNow())
	if syncs {
		pubRetry(js, "d0") // written, not synced: the leader's log is dirty
		waitFor(t, 20*time.Second, "a sync blocked", func() bool { return fss[victim].Blocked() > 0 })
	}
	start := time.Now()
	_, js2 := jsClient(t, c.servers[(victim+1)%3])
	if short {
		waitFor(t, 20*time.Second, "the wedged leader deposed", func() bool { return !old.isLeader() })
		fss[victim].Lift()
	}
	k := 0
	waitFor(t, 20*time.Second, "a publish through a follower's server accepted", func() bool {
		k++
		return pub(js2, fmt.Sprintf("s%d", k), 200*time.Millisecond) == nil
	})
	accepted := time.Since(start)
	waitFor(t, 20*time.Second, "the wedged leader's server serving no more", func() bool { return !old.isLeader() })
	stopped := time.Since(start)
	for i := range 10 {
		pubRetry(js2, fmt.Sprintf("t%d", i))
	}
	if n := c.servers[victim].raft.elections.deposed.Load(); n != 1 {
		t.Fatalf("%s deposed %d leaderships, want 1", c.servers[victim].Name(), n)
	}
	t.Logf("after the stall: a publish accepted %v (%d tries), the old leader serving no more %v", accepted, k, stopped)

	fss[victim].Lift()
	waitFor(t, 20*time.Second, "the old leader follows in a later term", func() bool {
		st := old.groupNow().softState()
		return !old.isLeader() && st.Role == raft.Follower && st.Term > oldTerm && st.Lead != raft.None
	})
	if n := c.servers[victim].raft.elections.resigned.Load(); short && n != 1 {
		t.Fatalf("%s: the group back from its stall resigned %d times, want 1", c.servers[victim].Name(), n)
	}
	for i := range 5 {
		pubRetry(js2, fmt.Sprintf("u%d", i))
	}
	checkWedgeReplicas(t, c, name, acked)
	// /jsz?raft=true counts them (asked once nothing is stalled: it
	// reads every stream's state)
	j := c.servers[victim].jszWith(true)
	if j.RaftDeposed != 1 || short && j.RaftResigned != 1 {
		t.Fatalf("/jsz?raft=true: raft_deposed %d raft_resigned %d", j.RaftDeposed, j.RaftResigned)
	}
}

// checkWedgeReplicas waits until every replica of the stream applied the
// same log with the same digest and store, and checks that every
// acknowledged message is stored at its sequence on each.
func checkWedgeReplicas(t *testing.T, c *jsTestCluster, name string, acked map[string]uint64) {
	t.Helper()
	var desc string
	waitFor(t, 20*time.Second, "replicas agree", func() bool {
		reps := c.replicas(name)
		if len(reps) != 3 {
			return false
		}
		var parts []string
		ok := true
		var a0, d0, m0 uint64
		for i, m := range reps {
			var st StreamState
			m.st().FastState(&st)
			m.mu.Lock()
			a, d := m.applied, m.digest
			m.mu.Unlock()
			parts = append(parts, fmt.Sprintf("%s: msgs %d applied %d digest %x", m.jsa.js.srv.Name(), st.Msgs, a, d))
			if i == 0 {
				a0, d0, m0 = a, d, st.Msgs
			}
			ok = ok && a == a0 && d == d0 && st.Msgs == m0
		}
		desc = strings.Join(parts, "; ")
		return ok
	})
	t.Logf("replicas: %s", desc)
	for _, m := range c.replicas(name) {
		var sm StoreMsg
		for id, seq := range acked {
			got, err := m.st().LoadMsg(seq, &sm)
			if err != nil || string(got.Msg) != id {
				t.Fatalf("%s: acknowledged %s at %d: %v %q", m.jsa.js.srv.Name(), id, seq, err, msgOf(got))
			}
		}
	}
}

func msgOf(m *StoreMsg) []byte {
	if m == nil {
		return nil
	}
	return m.Msg
}

// The wedge scan's verdict: a group inside the same pass (odd beat) for
// raftWedgeAfter is wedged, once; one waiting for work (even beat), or
// whose beat moved, never is.
func TestRaftWedgeWatch(t *testing.T) {
	var w wedgeWatch
	t0 := time.Unix(1000, 0)
	step := raftWedgeScanEvery
	for i := range 100 {
		if w.wedged(4, t0.Add(time.Duration(i)*step), 0) {
			t.Fatal("a group waiting for work found wedged")
		}
	}
	w = wedgeWatch{}
	for i := range 100 { // a busy group: a new pass at every scan
		if w.wedged(uint64(2*i+1), t0.Add(time.Duration(i)*step), 0) {
			t.Fatal("a group making passes found wedged")
		}
	}
	w = wedgeWatch{}
	verdicts := 0
	for at := time.Duration(0); at <= 3*raftWedgeAfter; at += step {
		if w.wedged(7, t0.Add(at), 0) {
			verdicts++
			if at < raftWedgeAfter {
				t.Fatalf("wedged after %v, before %v", at, raftWedgeAfter)
			}
		}
	}
	if verdicts != 1 {
		t.Fatalf("%d verdicts for one stuck pass, want 1", verdicts)
	}
	if w.wedged(9, t0.Add(4*raftWedgeAfter), 0) || !w.wedged(9, t0.Add(5*raftWedgeAfter+step), 0) {
		t.Fatal("the next stuck pass is judged afresh")
	}
}
