package server

import (
	"os"
	"path/filepath"
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
	c := runJSCluster(t, 3)
	nc, js := jsClient(t, c.servers[0])
	defer nc.Close()
	createStream(t, js, jetstream.StreamConfig{Name: "KEEP", Subjects: []string{"keep"}, Replicas: 3})
	for i := 0; i < 5; i++ {
		if _, err := js.Publish(ctx(t), "keep", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	down := 2
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
	if ack, err := rjs.Publish(ctx(t), "keep", []byte("y")); err != nil || ack.Sequence != 6 {
		t.Fatalf("publish after the wipe: %+v %v", ack, err)
	}
	checkReplicasAgree(t, c, "KEEP", 6)
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
	c := runJSCluster(t, 3)
	nc, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "KEEP", Subjects: []string{"keep"}, Replicas: 3})
	for i := 0; i < 5; i++ {
		if _, err := js.Publish(ctx(t), "keep", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	c.waitAllApplied(t, "KEEP", 3, 5, 10*time.Second)
	nc.Close()
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
