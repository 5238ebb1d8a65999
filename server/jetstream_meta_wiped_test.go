package server

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats.go/jetstream"
)

// wipeAndRestart stops the servers at idx, removes their JetStream
// directories and starts them again (together).
func wipeAndRestart(t *testing.T, c *jsTestCluster, idx ...int) {
	t.Helper()
	for _, i := range idx {
		c.servers[i].Shutdown()
		if err := os.RemoveAll(filepath.Join(c.opts[i].StoreDir, "jetstream")); err != nil {
			t.Fatal(err)
		}
	}
	c.startTogether(t, idx...)
}

// startTogether starts the (stopped) servers at idx again, at once.
func (c *jsTestCluster) startTogether(t *testing.T, idx ...int) {
	t.Helper()
	var wg sync.WaitGroup
	for _, i := range idx {
		wg.Add(1)
		go func() { defer wg.Done(); c.servers[i] = runServer(t, c.opts[i]) }()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}

// runKeepCluster runs three servers with an R3 stream KEEP (subject
// keep) holding five messages on every replica.
func runKeepCluster(t *testing.T) *jsTestCluster {
	t.Helper()
	c := runJSCluster(t, 3)
	nc, js := jsClient(t, c.servers[0])
	defer nc.Close()
	createStream(t, js, jetstream.StreamConfig{Name: "KEEP", Subjects: []string{"keep"}, Replicas: 3})
	for i := 0; i < 5; i++ {
		if _, err := js.Publish(ctx(t), "keep", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	c.waitAllApplied(t, "KEEP", 3, 5, 10*time.Second)
	return c
}

// metaStarted reports whether s runs its meta group.
func metaStarted(s *Server) bool {
	js := s.js.Load()
	if js == nil || js.cluster == nil {
		return false
	}
	g, _ := js.cluster.metaGroup()
	return g != nil
}

// TestJetStreamClusterWipedMetaMemberCatchesUp (issue 19): one server of
// three loses its whole JetStream directory and starts again. It abstains
// from meta elections until it caught up with the leader (its peers say
// the cluster has run), then serves: the marker that kept it abstaining is
// gone, it holds the stream again, and its API works.
func TestJetStreamClusterWipedMetaMemberCatchesUp(t *testing.T) {
	c := runKeepCluster(t)
	down := c.metaLeaderIndex() // the survivors elect another meanwhile
	wipeAndRestart(t, c, down)
	jc := c.servers[down].js.Load().cluster
	waitFor(t, 20*time.Second, "the wiped server caught up with the meta leader", func() bool {
		_, err := os.Stat(filepath.Join(jc.metaDir(), metaWiped))
		return metaStarted(c.servers[down]) && jc.metaLeaderKnown() && os.IsNotExist(err) && jc.assignment(globalAccountName, "KEEP") != nil
	})
	if !jc.js.storageWiped.Load() {
		t.Fatal("the wiped server did not find its storage lost")
	}
	// A write wakes the stream's group: an idle leader does not heartbeat,
	// and the replica may have started after the wake-up its route's return
	// caused expired (raft_early.go).
	rc, rjs := jsClient(t, c.servers[down])
	defer rc.Close()
	publishEventually(t, rjs, "keep", "y", 6)
	checkReplicasAgree(t, c, "KEEP", 6)
	c.waitMetaLeader() // the wiped server knowing a leader is not all of them knowing it
	createStream(t, rjs, jetstream.StreamConfig{Name: "AFTER", Subjects: []string{"after"}, Replicas: 3})
}

// TestJetStreamClusterWipedMetaMajorityFailsClosed (issue 19): two servers
// of three, the meta leader among them, lose their JetStream directories
// at once. Voting for each other with empty meta logs they elected a
// leader, whose log then replaced the third server's and erased every
// stream. They must abstain instead: no meta leader, the API answers
// 10008, and the third keeps the stream. (Had the intact server led, it
// would have kept leading and the wiped ones caught up from it.)
func TestJetStreamClusterWipedMetaMajorityFailsClosed(t *testing.T) {
	c := runKeepCluster(t)
	leader := c.waitMetaLeader()
	intact, wiped := -1, []int{}
	for i, s := range c.servers {
		if s != leader && intact < 0 {
			intact = i
		} else {
			wiped = append(wiped, i)
		}
	}
	wipeAndRestart(t, c, wiped...)
	waitFor(t, 20*time.Second, "the wiped servers run their meta groups", func() bool {
		return metaStarted(c.servers[wiped[0]]) && metaStarted(c.servers[wiped[1]])
	})
	// An election timeout is 10-20 ticks: watch for four of the longest.
	until := time.Now().Add(time.Duration(8*raft.DefaultElectionTicks) * raftTick)
	for time.Now().Before(until) {
		for _, s := range c.servers {
			if s.js.Load().cluster.isMetaLeader() {
				t.Fatalf("%s leads the meta group with a majority of the members wiped", s.Name())
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, s := range c.servers {
		if s.js.Load().cluster.metaLeaderKnown() {
			t.Fatalf("%s knows a meta leader (%s) with a majority of the members wiped", s.Name(), s.js.Load().cluster.metaLeaderName())
		}
	}
	rc := connectNATS(t, c.servers[intact].ClientURL())
	defer rc.Close()
	if _, code := infoOutcome(t, rc, "KEEP"); code != 10008 {
		t.Fatalf("STREAM.INFO answered code %d, want 10008", code)
	}
	if c.servers[intact].js.Load().cluster.assignment(globalAccountName, "KEEP") == nil {
		t.Fatal("the intact server lost the stream's assignment")
	}
	var st StreamState
	c.servers[intact].js.Load().account(globalAccountName).lookup("KEEP").st().FastState(&st)
	if st.Msgs != 5 {
		t.Fatalf("the intact server's replica holds %d messages, want 5", st.Msgs)
	}
}

// publishEventually publishes one message (deduplicated by its id while
// the stream elects a leader) and checks it is stored at seq.
func publishEventually(t *testing.T, js jetstream.JetStream, subj, id string, seq uint64) {
	t.Helper()
	var ack *jetstream.PubAck
	var err error
	waitFor(t, 20*time.Second, "a publish acknowledged", func() bool {
		c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		ack, err = js.Publish(c, subj, []byte(id), jetstream.WithMsgID(id))
		return err == nil
	})
	if ack.Sequence != seq {
		t.Fatalf("publish stored at %d, want %d", ack.Sequence, seq)
	}
}

// TestJetStreamClusterWipedFirstLeaderNotTermOneAgain (issue 19): a new
// stream's first leader leads term 1 without an election. When that server
// lost its storage and came back within 10 s of the creation, it applied
// the creation again as a new one and led term 1 a second time with an
// empty log, while the others held term 1's entries from its first time:
// two leaders of one term. A creation it learns catching up the meta log
// must start a replica that never leads term 1 (and, its storage lost,
// recovers from the others before it votes).
func TestJetStreamClusterWipedFirstLeaderNotTermOneAgain(t *testing.T) {
	c := runJSCluster(t, 3)
	nc, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "S", Subjects: []string{"s"}, Replicas: 3})
	nc.Close()
	var sa *streamAssignment // server 0 may apply the create after its answer
	waitFor(t, 5*time.Second, "server 0's assignment of S", func() bool {
		sa = c.servers[0].js.Load().cluster.assignment(globalAccountName, "S")
		return sa != nil
	})
	down := slices.IndexFunc(c.servers, func(s *Server) bool { return s.Name() == sa.firstLeader() })
	pc, pjs := jsClient(t, c.servers[(down+1)%3])
	defer pc.Close()
	for i := 0; i < 5; i++ {
		if _, err := pjs.Publish(ctx(t), "s", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	c.waitAllApplied(t, "S", 3, 5, 10*time.Second)
	wipeAndRestart(t, c, down)
	var g *raftGroup
	waitFor(t, 10*time.Second, "the wiped server runs its replica of S", func() bool {
		m := c.servers[down].js.Load().account(globalAccountName).lookup("S")
		if m != nil {
			m.mu.Lock()
			g = m.group
			m.mu.Unlock()
		}
		return g != nil
	})
	if age := time.Since(sa.Created); age >= 10*time.Second {
		t.Fatalf("the replica restarted %v after the creation: the first-term shortcut is not offered past 10 s, nothing tested", age)
	}
	if g.campaignsFirst() {
		t.Fatalf("%s, wiped, leads the first term of S again", c.servers[down].Name())
	}
	publishEventually(t, pjs, "s", "y", 6)
	checkReplicasAgree(t, c, "S", 6)
}

// TestJetStreamClusterWipedMetaWhilePeersDown (issue 19 review): a server
// loses its storage while both its peers are down and comes back before
// them. Had its meta group started then, no peer would have said it holds
// meta state: it would have voted as a new member with an empty log, and
// no later INFO turns a voting member into a recovering one
// (jetstream_meta_wiped.go says why none needs to). Its peers.json went
// with its storage, so it waits until every configured peer is connected:
// it does not start its meta group while they are down, and once they are
// back their INFOs say they hold meta state, so it abstains until it
// caught up, and serves the stream it lost.
func TestJetStreamClusterWipedMetaWhilePeersDown(t *testing.T) {
	c := runKeepCluster(t)
	const wiped = 0
	peers := []int{1, 2}
	for _, i := range peers {
		c.servers[i].Shutdown()
	}
	wipeAndRestart(t, c, wiped)
	until := time.Now().Add(time.Duration(8*raft.DefaultElectionTicks) * raftTick)
	for time.Now().Before(until) {
		if metaStarted(c.servers[wiped]) {
			t.Fatal("the wiped server started its meta group with its peers down")
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.startTogether(t, peers...)
	jc := c.servers[wiped].js.Load().cluster
	waitFor(t, 20*time.Second, "the wiped server's meta group started", func() bool { return metaStarted(c.servers[wiped]) })
	if !jc.js.storageWiped.Load() {
		t.Fatal("the wiped server did not find its storage lost once its peers were back")
	}
	waitFor(t, 20*time.Second, "the wiped server caught up with the meta leader", func() bool {
		_, err := os.Stat(filepath.Join(jc.metaDir(), metaWiped))
		return jc.metaLeaderKnown() && os.IsNotExist(err) && jc.assignment(globalAccountName, "KEEP") != nil
	})
	rc, rjs := jsClient(t, c.servers[wiped])
	defer rc.Close()
	publishEventually(t, rjs, "keep", "y", 6)
	checkReplicasAgree(t, c, "KEEP", 6)
}
