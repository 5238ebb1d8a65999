package server

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats-server/v2/internal/testutil/faultfs"
	"github.com/nats-io/nats-server/v2/internal/vfs"
	"github.com/nats-io/nats.go/jetstream"
)

// TestJetStreamClusterRaftPanicRestart: a replica whose group panicked
// once (a write to its log on a follower or on the leader, the group loop
// itself, or a write of the follower's store) is restarted by its server
// without a process restart: a
// new group runs, /healthz answers 200 again, the replica catches up, and
// every replica holds every acknowledged message, byte for byte. Without
// the restart the replica stays halted (TestJetStreamClusterRaftPanicShutdown).
func TestJetStreamClusterRaftPanicRestart(t *testing.T) {
	for _, where := range []string{"follower", "leader", "loop", "store"} {
		t.Run(where, func(t *testing.T) { testRaftPanicRestart(t, where) })
	}
}

func testRaftPanicRestart(t *testing.T, where string) {
	sep := string(os.PathSeparator)
	fss := make([]*faultfs.PanicFS, 3)
	for i := range fss {
		fss[i] = &faultfs.PanicFS{FS: vfs.Default, AtOnly: true, Match: sep + streamGroupName(globalAccountName, "BAD") + sep}
		if where == "store" { // its apply writes when a block fills (the block sealed, its index written)
			fss[i] = &faultfs.PanicFS{FS: vfs.Default, Match: sep + "BAD" + sep + "msgs" + sep}
		}
	}
	if where == "store" {
		setForTest(t, &fileStoreBlockSize, 4<<10)
	}
	c := runJSClusterWith(t, 3, func(i int, o *Options) { o.fsys = fss[i] })
	_, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "BAD", Subjects: []string{"bad"}, Replicas: 3})

	// Each message is published until acknowledged, under one message id:
	// a publish that timed out but was stored is not stored twice.
	want := map[uint64][32]byte{}
	next := 0
	publish := func() {
		t.Helper()
		next++
		data := []byte(fmt.Sprintf("message %d %0100d", next, 0))
		deadline := time.Now().Add(30 * time.Second)
		for {
			pctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			ack, err := js.Publish(pctx, "bad", data, jetstream.WithMsgID(fmt.Sprintf("id-%d", next)))
			cancel()
			if err == nil {
				want[ack.Sequence] = sha256.Sum256(data)
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("message %d never acknowledged: %v", next, err)
			}
		}
	}
	for range 20 {
		publish()
	}
	victim, s, name, g, old := c.badVictim(t, where)
	if where == "loop" {
		g.control(func(*raft.Node) { panic("test: loop bug") })
	} else {
		fss[victim].Write.Store(true)
		for i := 0; !fss[victim].Fired.Load(); i++ {
			if i == 200 {
				t.Fatal("the armed write never came")
			}
			publish()
		}
	}
	waitFor(t, 10*time.Second, "BAD's group halted on the victim", func() bool { return g.healthy() != nil })
	for range 20 { // the stream stays available meanwhile
		publish()
	}
	c.waitReplicaRestarted(t, s, name, g, old)
	waitFor(t, 10*time.Second, "/healthz 200 on the victim", func() bool {
		return s.jsHealth(httptest.NewRequest("GET", "/healthz", nil)) == nil
	})
	// the counter moves after the new replica is visible: wait for it
	restarted := s.js.Load().restarts.Load().restarted.Load
	waitFor(t, 5*time.Second, "the restart counted", func() bool { return restarted() >= 1 })
	if n := restarted(); n != 1 {
		t.Fatalf("%d restarts, want 1", n)
	}
	for range 20 {
		publish()
	}
	c.waitAllApplied(t, "BAD", 3, uint64(len(want)), 20*time.Second)
	for _, m := range c.replicas("BAD") {
		if got := replicaDigest(m, want); got != "" {
			t.Fatalf("%s: %s", m.jsa.js.srv.Name(), got)
		}
	}
}

// TestJetStreamClusterRaftPanicRestartBounded: a replica that keeps
// halting is restarted haltRestartMax times, then stays halted and
// reported by /healthz; the stream stays available through the others.
func TestJetStreamClusterRaftPanicRestartBounded(t *testing.T) {
	setForTest(t, &haltRestartFirst, 50*time.Millisecond)
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "BAD", Subjects: []string{"bad"}, Replicas: 3})
	s := c.servers[1]
	g := haltUntilGivenUp(t, s) // stream_halt_revive_test.go: also /healthz 503
	if ng := s.raftGroup(streamGroupName(globalAccountName, "BAD")); ng != g {
		t.Fatal("the replica was restarted more than haltRestartMax times")
	}
	if n := s.js.Load().restarts.Load().restarted.Load(); n != haltRestartMax {
		t.Fatalf("%d restarts, want %d", n, haltRestartMax)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.Publish(ctx, "bad", []byte("still available")); err != nil {
		t.Fatal(err)
	}
}

// The restart counts are kept only for recent halts: a count forgiven
// (haltRestartForgive after its last restart) leaves the map, so streams
// that halted once and were deleted do not accumulate.
func TestHaltRestartTriesForgotten(t *testing.T) {
	s, clk, nc := runManualClockServer(t, nil)
	for _, name := range []string{"H1", "H2", "H3"} {
		jsCreate(t, nc, name, `{"name":"`+name+`","subjects":["`+name+`"],"storage":"file"}`)
	}
	js := s.js.Load()
	r := &haltRestarts{js: js, tries: map[string]haltTries{}}
	acc := js.account(globalAccountName)
	r.schedule(acc.lookup("H1"))
	r.schedule(acc.lookup("H2"))
	if len(r.tries) != 2 {
		t.Fatalf("%d counts, want 2", len(r.tries))
	}
	clk.Advance(haltRestartForgive + haltRestartFirst + time.Second)
	r.schedule(acc.lookup("H3"))
	if len(r.tries) != 1 {
		t.Fatalf("%d counts kept after the forgiveness window, want 1 (H3's): %v", len(r.tries), r.tries)
	}
}

// badVictim is the server whose replica of stream BAD a test breaks: its
// leader's if where is "leader", a follower's otherwise; with its index,
// the group's name, the group and the replica.
func (c *jsTestCluster) badVictim(t *testing.T, where string) (int, *Server, string, *raftGroup, *stream) {
	t.Helper()
	victim := c.waitLeaderIndex(t, "BAD")
	if where != "leader" {
		victim = (victim + 1) % 3
	}
	s := c.servers[victim]
	name := streamGroupName(globalAccountName, "BAD")
	g, old := s.raftGroup(name), c.replicaOn(s, "BAD")
	if g == nil || old == nil {
		t.Fatal("no replica of BAD on the victim")
	}
	return victim, s, name, g, old
}

// waitReplicaRestarted waits until s runs a new, healthy group name and a
// new replica of BAD in place of g and old (a halted replica restarted).
func (c *jsTestCluster) waitReplicaRestarted(t *testing.T, s *Server, name string, g *raftGroup, old *stream) {
	t.Helper()
	waitFor(t, 20*time.Second, "BAD's replica restarted on the victim", func() bool {
		ng := s.raftGroup(name)
		m := c.replicaOn(s, "BAD")
		return ng != nil && ng != g && ng.healthy() == nil && m != nil && m != old
	})
}
