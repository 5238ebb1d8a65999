package server

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats.go/jetstream"
)

// TestJetStreamClusterRestartAnswersNoOldCreates: the server that answered
// a batch of creates (the meta leader, their origin) restarts and applies
// its meta log again. It answers none of them a second time: each answer
// was a goroutine waiting for the stream's leader and building its info
// while the groups started, ~3,700 of them at a restart with 10,000
// streams, contending with the groups' leader updates (scripts/stream-scale).
func TestJetStreamClusterRestartAnswersNoOldCreates(t *testing.T) {
	answers := map[string]*atomic.Int64{"S1": {}, "S2": {}, "S3": {}}
	testHookMetaAnswer = func(s *Server, me *metaEntry) {
		if me.Op == "add" {
			answers[s.Name()].Add(1)
		}
	}
	t.Cleanup(func() { testHookMetaAnswer = nil }) // after the cluster stopped
	c := runJSCluster(t, 3)
	leader := c.waitMetaLeader()
	nc := connectNATS(t, leader.ClientURL())
	js, _ := jetstream.New(nc)
	const n = 30
	for i := 0; i < n; i++ {
		createStream(t, js, jetstream.StreamConfig{Name: fmt.Sprintf("RA%d", i), Replicas: 3})
	}
	nc.Close()
	name := leader.Name()
	if got := answers[name].Load(); got != n {
		t.Fatalf("the meta leader %s started %d answers to %d creates: not their origin", name, got, n)
	}
	idx := 0
	for i, s := range c.servers {
		if s == leader {
			idx = i
		}
	}
	leader.Shutdown()
	c.servers[idx] = runServer(t, c.opts[idx])
	s := c.servers[idx]
	waitFor(t, 20*time.Second, "every replica started on the restarted server", func() bool {
		for i := 0; i < n; i++ {
			if c.replicaOn(s, fmt.Sprintf("RA%d", i)) == nil {
				return false
			}
		}
		return true
	})
	if got := answers[name].Load(); got != n {
		t.Fatalf("the restarted %s answered %d old creates again", name, got-n)
	}
	// A create after the restart is answered as ever.
	nc = connectNATS(t, s.ClientURL())
	defer nc.Close()
	js, _ = jetstream.New(nc)
	c.waitMetaLeader()
	createStream(t, js, jetstream.StreamConfig{Name: "RA-NEW", Replicas: 3})
}

// TestJetStreamClusterRestartLogsReplicasCurrent: a restarted server logs
// when every replica it started from what it held is current, with the
// time since its start (scripts/stream-scale reads the line).
func TestJetStreamClusterRestartLogsReplicasCurrent(t *testing.T) {
	setForTest(t, &restartLogMin, 1)
	c := runJSCluster(t, 3)
	nc := connectNATS(t, c.servers[0].ClientURL())
	js, _ := jetstream.New(nc)
	const n = 5
	for i := 0; i < n; i++ {
		createStream(t, js, jetstream.StreamConfig{Name: fmt.Sprintf("RC%d", i), Replicas: 3})
		if _, err := js.Publish(ctx(t), fmt.Sprintf("RC%d", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	nc.Close()
	c.servers[2].Shutdown()
	log := &noticeLog{}
	s, err := NewServer(c.opts[2])
	if err != nil {
		t.Fatal(err)
	}
	s.SetLogger(log, false, false)
	s.Start()
	t.Cleanup(s.Shutdown)
	c.servers[2] = s
	want := fmt.Sprintf("%d replicas current ", n)
	waitFor(t, 20*time.Second, "the restarted server logs its replicas current", func() bool { return log.has(want) })
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("RC%d", i)
		if m := c.replicaOn(s, name); m == nil {
			t.Fatalf("no replica of %s on the restarted server", name)
		}
	}
}

// TestJetStreamClusterRestartAnswersCreatesOverCutTail: a meta leader cut
// off appends entries no one else gets, stops, and restarts: its log's
// uncommitted tail is replaced by the new leader's entries. Once it leads
// again, a create it proposes at an index of that old tail is a new call
// and is answered (an index up to the log's last at the restart does not
// make an entry one replayed from the server's own log).
func TestJetStreamClusterRestartAnswersCreatesOverCutTail(t *testing.T) {
	_, a := leadAgainOverCutTail(t)
	nc := connectNATS(t, a.ClientURL())
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "OVER", Replicas: 3}); err != nil {
		t.Fatalf("a create proposed over the old tail was not answered: %v", err)
	}
}

// TestJetStreamClusterCreateOverCutTailStartsCreated: the creates the
// restarted meta leader proposes over its log's cut tail start their
// replicas there as creations, not as replayed ones: the one whose first
// leader it is leads term 1 at once. Before, the start mode went by index
// alone, so its replica waited out an election timeout and the group
// elected a leader of a later term, and the replicas counted as restarted.
func TestJetStreamClusterCreateOverCutTailStartsCreated(t *testing.T) {
	c, a := leadAgainOverCutTail(t)
	jc := a.js.Load().cluster
	restarted := jc.restart.started.Load()
	_, js := jsClient(t, a)
	const n = 3 // one first leadership per server (spreadFirstLeader)
	for i := range n {
		createStream(t, js, jetstream.StreamConfig{Name: fmt.Sprint("OVER", i), Replicas: 3})
	}
	if got := jc.restart.started.Load() - restarted; got != 0 {
		t.Fatalf("%d of %d replicas created over the cut tail started on %s as replayed", got, n, a.Name())
	}
	led := 0
	for i := range n {
		name := fmt.Sprint("OVER", i)
		if jc.assignment(globalAccountName, name).firstLeader() != a.Name() {
			continue
		}
		led++
		var st raft.SoftState
		waitFor(t, 5*time.Second, "a leader of "+name, func() bool {
			if m := c.replicaOn(a, name); m != nil && m.group != nil {
				st = m.group.softState()
			}
			return st.Lead != raft.None
		})
		if st.Lead != raftID(a.Name()) || st.Term != 1 {
			t.Fatalf("%s: its first leader %s did not lead term 1 at once: leader %x in term %d", name, a.Name(), st.Lead, st.Term)
		}
	}
	if led == 0 {
		t.Fatalf("no stream of %d had %s as its first leader", n, a.Name())
	}
}

// leadAgainOverCutTail sets up a meta leader whose log's uncommitted tail
// was cut by a new leader while it was down, leading again with room in
// that old tail for new entries.
func leadAgainOverCutTail(t *testing.T) (*jsTestCluster, *Server) {
	t.Helper()
	c := runJSCluster(t, 3)
	a := c.waitMetaLeader()
	idx := 0
	var rest []*Server
	for i, s := range c.servers {
		if s == a {
			idx = i
		} else {
			rest = append(rest, s)
		}
	}
	jc := a.js.Load().cluster
	jc.mu.Lock()
	g := jc.meta
	jc.mu.Unlock()
	first, _ := g.log.LastIndex()
	partition([]*Server{a}, rest)
	const tail = 30
	for i := 0; i < tail; i++ { // uncommitted: the others are cut off
		me := metaEntry{Op: "add", SA: &streamAssignment{Account: globalAccountName, Config: StreamConfig{Name: fmt.Sprint("TAIL", i)}}}
		b, _ := json.Marshal(&me)
		g.Propose(b, nil)
	}
	waitFor(t, 5*time.Second, "the cut-off leader's tail in its log", func() bool {
		last, _ := g.log.LastIndex()
		return last >= first+tail
	})
	tailEnd, _ := g.log.LastIndex()
	a.Shutdown()
	heal(rest)
	// The others elect a leader of a later term before it is back: else
	// its longer log wins it the election and its tail is committed.
	waitFor(t, 15*time.Second, "a meta leader among the others", func() bool {
		return slices.ContainsFunc(rest, func(s *Server) bool { return s.js.Load().cluster.isMetaLeader() })
	})
	c.servers[idx] = runServer(t, c.opts[idx])
	a = c.servers[idx]
	for try := 0; c.waitMetaLeader() != a; try++ {
		if try == 30 {
			t.Fatal("the restarted server never led the meta group again")
		}
		c.stepDownMeta()
	}
	jc = a.js.Load().cluster
	jc.mu.Lock()
	g = jc.meta
	jc.mu.Unlock()
	if last, _ := g.log.LastIndex(); last+10 >= tailEnd {
		t.Fatalf("the meta log is at %d, near the old tail's end %d: no create can land in it", last, tailEnd)
	}
	return c, a
}
