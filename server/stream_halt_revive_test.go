package server

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats-server/v2/internal/vfs"
	"github.com/nats-io/nats.go/jetstream"
)

// haltUntilGivenUp halts BAD's group on s each time it runs again, until
// its server gives up restarting it (haltRestartMax restarts); the halted
// group.
func haltUntilGivenUp(t *testing.T, s *Server) *raftGroup {
	t.Helper()
	name := streamGroupName(globalAccountName, "BAD")
	r := s.js.Load().restarts.Load()
	gaveUp := r.gaveUp.Load()
	var g *raftGroup
	for i := 0; i <= haltRestartMax; i++ {
		waitFor(t, 20*time.Second, "BAD's group running on "+s.Name(), func() bool {
			ng := s.raftGroup(name)
			if ng == nil || ng == g || ng.healthy() != nil {
				return false
			}
			g = ng
			return true
		})
		g.control(func(*raft.Node) { panic("test: loop bug") })
		waitFor(t, 10*time.Second, "BAD's group halted on "+s.Name(), func() bool { return g.healthy() != nil })
	}
	waitFor(t, 10*time.Second, "the restarts given up", func() bool { return r.gaveUp.Load() == gaveUp+1 })
	if h := s.jsHealth(httptest.NewRequest("GET", "/healthz", nil)); h == nil || h.StatusCode != 503 {
		t.Fatalf("/healthz does not report the halted group: %+v", h)
	}
	if n := s.jszWith(false).RaftGroupsHalted; n != 1 {
		t.Fatalf("/jsz raft_groups_halted %d, want 1", n)
	}
	return g
}

// waitHealthy waits for s's /healthz to answer 200 and /jsz to report
// nothing halted, broken or failed.
func waitHealthy(t *testing.T, s *Server, d time.Duration) {
	t.Helper()
	waitFor(t, d, "/healthz 200 on "+s.Name(), func() bool {
		return s.jsHealth(httptest.NewRequest("GET", "/healthz", nil)) == nil
	})
	if j := s.jszWith(false); j.RaftGroupsHalted+j.StoresBroken+j.RestartsFailed != 0 {
		t.Fatalf("/jsz still reports halted %d, broken %d, failed %d", j.RaftGroupsHalted, j.StoresBroken, j.RestartsFailed)
	}
}

// TestJetStreamClusterHaltedReplicaRevived: a replica its server gave up
// restarting (haltRestartMax restarts) is restarted without a process
// restart by an operator's call every server receives: an update of the
// stream with its config unchanged, or a leader stepdown. It runs again
// with its count at zero (it is restarted again after a later halt), and
// /healthz answers 200. Before, it stayed halted until the process
// restarted ("revived" times out).
func TestJetStreamClusterHaltedReplicaRevived(t *testing.T) {
	for _, how := range []string{"update", "stepdown"} {
		t.Run(how, func(t *testing.T) { testHaltedReplicaRevived(t, how) })
	}
}

func testHaltedReplicaRevived(t *testing.T, how string) {
	setForTest(t, &haltRestartFirst, 50*time.Millisecond)
	c := runJSCluster(t, 3)
	nc, js := jsClient(t, c.servers[0])
	cfg := jetstream.StreamConfig{Name: "BAD", Subjects: []string{"bad"}, Replicas: 3}
	createStream(t, js, cfg)
	jsPubN(t, js, "bad", 5)
	s := c.servers[1]
	g := haltUntilGivenUp(t, s)
	r := s.js.Load().restarts.Load()
	switch how {
	case "update":
		if _, err := js.UpdateStream(ctx(t), cfg); err != nil {
			t.Fatal(err)
		}
	case "stepdown":
		if _, err := nc.Request("$JS.API.STREAM.LEADER.STEPDOWN.BAD", nil, 5*time.Second); err != nil {
			t.Logf("stepdown: %v", err) // the revive does not wait for the answer
		}
	}
	name := streamGroupName(globalAccountName, "BAD")
	waitFor(t, 20*time.Second, "BAD's replica revived on S2", func() bool {
		ng := s.raftGroup(name)
		return ng != nil && ng != g && ng.healthy() == nil && c.replicaOn(s, "BAD") != nil
	})
	if n := r.revived.Load(); n != 1 {
		t.Fatalf("%d replicas revived, want 1", n)
	}
	waitHealthy(t, s, 10*time.Second)
	jsPubN(t, js, "bad", 5)
	c.waitAllApplied(t, "BAD", 3, 10, 20*time.Second)
	// its count starts from zero: a halt now is restarted, not given up
	before := r.restarted.Load()
	ng := s.raftGroup(name)
	ng.control(func(*raft.Node) { panic("test: loop bug") })
	waitFor(t, 20*time.Second, "the revived replica restarted after a halt", func() bool { return r.restarted.Load() == before+1 })
}

// TestJetStreamClusterHaltedReplicaForgotten: a replica given up, whose
// stream is deleted, is forgotten: /healthz and /jsz report nothing,
// and a stream made again under the name whose replica halts is
// restarted (counting from zero). Before, the count was kept by name for
// haltRestartForgive: the new stream's first halt was given up at once.
func TestJetStreamClusterHaltedReplicaForgotten(t *testing.T) {
	setForTest(t, &haltRestartFirst, 50*time.Millisecond)
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	cfg := jetstream.StreamConfig{Name: "BAD", Subjects: []string{"bad"}, Replicas: 3}
	createStream(t, js, cfg)
	s := c.servers[1]
	haltUntilGivenUp(t, s)
	if err := js.DeleteStream(ctx(t), "BAD"); err != nil {
		t.Fatal(err)
	}
	waitHealthy(t, s, 10*time.Second)
	createStream(t, js, cfg)
	r := s.js.Load().restarts.Load()
	before, gaveUp := r.restarted.Load(), r.gaveUp.Load()
	name := streamGroupName(globalAccountName, "BAD")
	var g *raftGroup
	waitFor(t, 20*time.Second, "the new BAD's group running on S2", func() bool {
		g = s.raftGroup(name)
		return g != nil && g.healthy() == nil
	})
	g.control(func(*raft.Node) { panic("test: loop bug") })
	waitFor(t, 20*time.Second, "the new stream's replica restarted", func() bool {
		return r.restarted.Load() == before+1 || r.gaveUp.Load() != gaveUp
	})
	if r.gaveUp.Load() != gaveUp {
		t.Fatal("the new stream's first halt was given up: the deleted stream's count was kept")
	}
	waitHealthy(t, s, 10*time.Second)
}

// TestJetStreamClusterFailedRestartCleared: a halted replica whose
// restart could not start it (its store cannot be made) keeps /healthz at
// 503 only while it matters: once the stream is deleted, or this server
// is removed from its placement, /healthz answers 200 and /jsz reports
// no failed restart; an update of the stream (the disk healed) starts the
// replica. Before, the failure stayed on /healthz until the process
// restarted, whatever became of the stream.
func TestJetStreamClusterFailedRestartCleared(t *testing.T) {
	for _, then := range []string{"deleted", "removed", "update"} {
		t.Run(then, func(t *testing.T) { testFailedRestartCleared(t, then) })
	}
}

func testFailedRestartCleared(t *testing.T, then string) {
	setForTest(t, &haltRestartFirst, 50*time.Millisecond)
	fss := []*vfs.MemFS{vfs.NewMem(), vfs.NewMem(), vfs.NewMem()}
	var broken atomic.Bool
	// A replica's store looks for its directory at its open and makes it
	// when that fails: both fail while broken.
	fss[1].InjectError(func(op, name string) error {
		if broken.Load() && strings.HasSuffix(name, "/BAD/msgs") && (op == "stat" || op == "mkdir") {
			return errors.New("injected store failure")
		}
		return nil
	})
	c := runJSClusterWith(t, 3, func(i int, o *Options) { o.fsys = fss[i] })
	nc, js := jsClient(t, c.servers[0])
	cfg := jetstream.StreamConfig{Name: "BAD", Subjects: []string{"bad"}, Replicas: 3}
	createStream(t, js, cfg)
	jsPubN(t, js, "bad", 5)
	s := c.servers[1]
	name := streamGroupName(globalAccountName, "BAD")
	var g *raftGroup
	waitFor(t, 20*time.Second, "BAD's group running on S2", func() bool {
		g = s.raftGroup(name)
		return g != nil && g.healthy() == nil
	})
	broken.Store(true)
	g.control(func(*raft.Node) { panic("test: loop bug") })
	waitFor(t, 20*time.Second, "the failed restart reported", func() bool {
		h := s.jsHealth(httptest.NewRequest("GET", "/healthz", nil))
		return h != nil && strings.Contains(h.Error, "restarting its halted replica failed")
	})
	if c.replicaOn(s, "BAD") != nil {
		t.Fatal("S2 runs a replica of BAD although its restart failed")
	}
	if n := s.jszWith(false).RestartsFailed; n != 1 {
		t.Fatalf("/jsz replica_restarts_failed %d, want 1", n)
	}
	switch then {
	case "deleted":
		if err := js.DeleteStream(ctx(t), "BAD"); err != nil {
			t.Fatal(err)
		}
	case "removed":
		resp, err := nc.Request("$JS.API.STREAM.PEER.REMOVE.BAD", []byte(`{"peer":"`+s.Name()+`"}`), 5*time.Second)
		if err != nil || !strings.Contains(string(resp.Data), `"success":true`) {
			t.Fatalf("peer remove: %v %s", err, resp.Data)
		}
	case "update":
		broken.Store(false)
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := js.UpdateStream(cctx, cfg); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 20*time.Second, "BAD's replica started again on S2", func() bool {
			ng := s.raftGroup(name)
			return ng != nil && ng.healthy() == nil && c.replicaOn(s, "BAD") != nil
		})
		c.waitAllApplied(t, "BAD", 3, 5, 20*time.Second)
	}
	waitHealthy(t, s, 10*time.Second)
}

// TestJetStreamStoreBrokenCountsNow: brokenStores (/jsz stores_broken)
// counts the streams whose store is broken now: a stream on one server
// whose store panicked counts until it is deleted. Before, the count
// never went down.
func TestJetStreamStoreBrokenCountsNow(t *testing.T) {
	setForTest(t, &fileStoreBlockSize, 4<<10)
	pfs, o := badStorePanicOptions(t)
	s := runServer(t, o)
	_, js := jsClient(t, s)
	createStream(t, js, jetstream.StreamConfig{Name: "BAD", Subjects: []string{"bad"}, Storage: jetstream.FileStorage})
	pfs.Write.Store(true)
	for i := 0; !pfs.Fired.Load(); i++ {
		if i == 500 {
			t.Fatal("the armed store write never came")
		}
		_, _ = js.Publish(ctx(t), "bad", make([]byte, 100))
	}
	waitFor(t, 5*time.Second, "the broken store counted", func() bool { return s.jszWith(false).StoresBroken == 1 })
	if h := s.jsHealth(httptest.NewRequest("GET", "/healthz", nil)); h == nil {
		t.Fatal("/healthz does not report the broken store")
	}
	if err := js.DeleteStream(ctx(t), "BAD"); err != nil {
		t.Fatal(err)
	}
	if n := s.js.Load().brokenStores.Load(); n != 0 {
		t.Fatalf("%d broken stores counted after the stream's deletion, want 0", n)
	}
	waitHealthy(t, s, 5*time.Second)
}
