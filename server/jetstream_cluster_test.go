package server

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// jsCluster3 starts n JetStream servers that all list every route.
type jsTestCluster struct {
	t       testing.TB
	servers []*Server
	opts    []*Options
}

func runJSCluster(t testing.TB, n int) *jsTestCluster {
	t.Helper()
	return runJSClusterWith(t, n, nil)
}

// runJSClusterWith lets tweak adjust each server's options first.
func runJSClusterWith(t testing.TB, n int, tweak func(i int, o *Options)) *jsTestCluster {
	t.Helper()
	ports := make([]int, n)
	for i := range ports {
		ports[i] = freePort(t)
	}
	var routes []*url.URL
	for _, p := range ports {
		routes = append(routes, &url.URL{Scheme: "nats-route", Host: fmt.Sprintf("127.0.0.1:%d", p)})
	}
	c := &jsTestCluster{t: t}
	for i := 0; i < n; i++ {
		o := testOptions()
		o.ServerName = fmt.Sprintf("S%d", i+1)
		o.Cluster.Name = "JSC"
		o.Cluster.Host = "127.0.0.1"
		o.Cluster.Port = ports[i]
		o.Routes = routes
		o.JetStream = true
		o.StoreDir = t.TempDir()
		if tweak != nil {
			tweak(i, o)
		}
		c.opts = append(c.opts, o)
	}
	var wg sync.WaitGroup
	c.servers = make([]*Server, n)
	for i := range c.opts {
		wg.Add(1)
		go func() { defer wg.Done(); c.servers[i] = runServer(t, c.opts[i]) }()
	}
	wg.Wait()
	if t.Failed() { // a server did not start (runServer's Fatalf ended only its goroutine)
		t.FailNow()
	}
	waitForMesh(t, c.servers)
	c.waitMetaLeader()
	return c
}

// waitMetaLeader waits until a meta leader exists and every running
// server knows it (until then a server answers API requests with 10008).
// restartAll stops every server, then starts them all again from their
// options and waits for a meta leader.
func (c *jsTestCluster) restartAll(t *testing.T) {
	t.Helper()
	for _, s := range c.servers {
		s.Shutdown()
	}
	for i := range c.servers {
		c.servers[i] = runServer(t, c.opts[i])
	}
	c.waitMetaLeader()
}

// serverNamed is the cluster's server called name; the test fails if none is.
func (c *jsTestCluster) serverNamed(name string) *Server {
	c.t.Helper()
	for _, s := range c.servers {
		if s.Name() == name {
			return s
		}
	}
	c.t.Fatalf("no server named %q", name)
	return nil
}

// waitMetaLeader waits until a running server leads the meta group and
// every running server knows it as the leader. A server shut down keeps
// its last view (it may still think it leads), and the survivors of a
// shut-down leader believe in it until an election timeout passes: both
// are ignored, or a test would send meta requests that the survivors
// drop unanswered.
func (c *jsTestCluster) waitMetaLeader() *Server {
	var leader *Server
	waitFor(c.t, 15*time.Second, "meta leader known to every server", func() bool {
		leader = nil
		for _, s := range c.servers {
			if js := s.js.Load(); js != nil && js.cluster != nil && s.Running() && js.cluster.isMetaLeader() {
				leader = s
			}
		}
		if leader == nil {
			return false
		}
		for _, s := range c.servers {
			if js := s.js.Load(); js != nil && js.cluster != nil && s.Running() && js.cluster.metaLeaderName() != leader.Name() {
				return false
			}
		}
		return true
	})
	return leader
}

// notMetaLeader is a running server other than ml (the meta leader), to
// send requests through a follower of the meta group.
func (c *jsTestCluster) notMetaLeader(ml *Server) *Server {
	for _, s := range c.servers {
		if s != ml && s.Running() {
			return s
		}
	}
	c.t.Fatal("no running server but the meta leader")
	return nil
}

// waitLeaderIndex waits for a replica of stream that leads it and returns
// its server's index in c.servers.
func (c *jsTestCluster) waitLeaderIndex(t *testing.T, stream string) int {
	t.Helper()
	idx := -1
	waitFor(t, 10*time.Second, "a leader of "+stream, func() bool {
		for i, s := range c.servers {
			if m := c.replicaOn(s, stream); m != nil && m.isLeader() {
				idx = i
				return true
			}
		}
		return false
	})
	return idx
}

// replicas returns every server's local replica of the stream.
// waitAllApplied waits until stream name has replicas on n servers and
// each has stored up to sequence last (a follower may lag the acks).
func (c *jsTestCluster) waitAllApplied(t testing.TB, name string, n int, last uint64, d time.Duration) {
	t.Helper()
	waitFor(t, d, "every replica applied every message", func() bool {
		for _, m := range c.replicas(name) {
			var ss StreamState
			m.st().FastState(&ss)
			if ss.LastSeq != last {
				return false
			}
		}
		return len(c.replicas(name)) == n
	})
}

func (c *jsTestCluster) replicas(name string) []*stream {
	return c.accountReplicas(globalAccountName, name)
}

func TestJetStreamClusterCreateAndPublish(t *testing.T) {
	c := runJSCluster(t, 3)
	waitFor(t, 5*time.Second, "every server healthy with a meta leader", func() bool {
		for _, s := range c.servers {
			req := httptest.NewRequest("GET", "/healthz?js-server-only=true", nil)
			if s.jsHealth(req) != nil || s.jsz().Meta == nil || s.jsz().Meta.Leader == "" {
				return false
			}
		}
		return true
	})
	_, js := jsClient(t, c.servers[0])
	st := createStream(t, js, jetstream.StreamConfig{Name: "R3", Subjects: []string{"r3.>"}, Replicas: 3})
	if st.CachedInfo().Cluster == nil || st.CachedInfo().Cluster.Leader == "" {
		t.Fatalf("no leader in create response: %+v", st.CachedInfo().Cluster)
	}
	for i, s := range c.servers {
		_, js := jsClient(t, s)
		ack, err := js.Publish(ctx(t), "r3.x", []byte(fmt.Sprint(i)))
		if err != nil || ack.Sequence != uint64(i+1) {
			t.Fatalf("publish via %s: %+v %v", s.Name(), ack, err)
		}
	}
	waitFor(t, 5*time.Second, "replicas applied", func() bool {
		reps := c.replicas("R3")
		if len(reps) != 3 {
			return false
		}
		for _, m := range reps {
			var st StreamState
			m.st().FastState(&st)
			if st.Msgs != 3 {
				return false
			}
		}
		return true
	})
	_, js2 := jsClient(t, c.servers[2])
	info, err := js2.Stream(ctx(t), "R3")
	if err != nil || info.CachedInfo().State.Msgs != 3 {
		t.Fatalf("info from another server: %v", err)
	}
	if err := js2.DeleteStream(ctx(t), "R3"); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Stream(ctx(t), "R3"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	_ = nats.ErrTimeout
}

// scriptedPublish is one step of a publish script with headers.
type scriptedPublish struct {
	subj string
	hdr  map[string]string
}

var parityScript = []scriptedPublish{
	{"p.a", nil},
	{"p.a", map[string]string{JSMsgId: "id1"}},
	{"p.a", map[string]string{JSMsgId: "id1"}}, // duplicate
	{"p.b", map[string]string{JSExpectedLastSubjSeq: "0"}},
	{"p.b", map[string]string{JSExpectedLastSubjSeq: "0"}}, // wrong now
	{"p.a", map[string]string{JSExpectedLastSeq: "4"}},
	{"p.a", map[string]string{JSExpectedLastSeq: "1"}},
	{"p.c", map[string]string{JSExpectedLastMsgId: "id1"}}, // last stored had no id
	{"p.c", map[string]string{JSMsgId: "id2"}},
	{"p.c", map[string]string{JSExpectedLastMsgId: "id2"}},
	{"p.c", map[string]string{JSExpectedStream: "OTHER"}},
	{"p.d", map[string]string{JSExpectedLastSubjSeq: "7", JSExpectedLastSubjSeqSubj: "{p}p.*"}},
	{"p.d", map[string]string{JSExpectedLastSubjSeq: "2", JSExpectedLastSubjSeqSubj: "{p}p.a"}},
	{"p.d", map[string]string{JSExpectedLastSubjSeqSubj: "{p}p.a"}},
}

// runScript publishes the script and returns each raw answer with the
// stream name removed, so R1 and R3 answers can be compared.
func runScript(t *testing.T, nc *nats.Conn, stream string, prefix string) []string {
	var out []string
	for _, p := range parityScript {
		m := nats.NewMsg(prefix + p.subj)
		for k, v := range p.hdr {
			m.Header.Set(k, strings.ReplaceAll(v, "{p}", prefix))
		}
		m.Data = []byte("x")
		ack, err := clusterCASPublish(nc, m)
		if err != nil {
			t.Fatal(err)
		}
		if ack.Error != nil {
			out = append(out, fmt.Sprintf("err %d %s", ack.Error.ErrCode, ack.Error.Description))
		} else {
			out = append(out, fmt.Sprintf("seq %d dup %v", ack.Seq, ack.Duplicate))
		}
	}
	return out
}

func TestJetStreamClusterR1AndR3GiveTheSameAnswers(t *testing.T) {
	c := runJSCluster(t, 3)
	nc, js := jsClient(t, c.servers[1])
	for _, r := range []int{1, 3} {
		name := fmt.Sprintf("P%d", r)
		if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: name, Subjects: []string{name + ".p.*"}, Replicas: r}); err != nil {
			t.Fatal(err)
		}
	}
	r1 := runScript(t, nc, "P1", "P1.")
	r3 := runScript(t, nc, "P3", "P3.")
	for i := range r1 {
		if r1[i] != r3[i] {
			t.Fatalf("step %d: R1 %q, R3 %q", i, r1[i], r3[i])
		}
	}
	// The script exercises acceptance, duplicates and every rejection kind.
	want := map[string]bool{"seq 1 dup false": true, "seq 2 dup true": true, "err 10071 wrong last sequence: 3": true, "err 10071 wrong last sequence: 5": true, "seq 6 dup false": true,
		"err 10070 wrong last msg ID: ": true, "err 10060 expected stream does not match": true, "err 10193 missing sequence for expected last sequence per subject": true}
	seen := map[string]bool{}
	for _, a := range r3 {
		seen[a] = true
	}
	for w := range want {
		if !seen[w] {
			t.Fatalf("script answers %q lack %q", r3, w)
		}
	}
}

func TestJetStreamClusterLastMsgIdMismatchIsARejection(t *testing.T) {
	// nats-server 2.14 treats this as a fatal write error on R3 and loses
	// the stream leader; here it is an ordinary 10070 and the stream goes on.
	c := runJSCluster(t, 3)
	nc, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "MID", Subjects: []string{"mid"}, Replicas: 3})
	m := nats.NewMsg("mid")
	m.Header.Set(JSMsgId, "a")
	if ack, err := clusterCASPublish(nc, m); err != nil || ack.Error != nil {
		t.Fatalf("%+v %v", ack, err)
	}
	for i := 0; i < 5; i++ {
		m = nats.NewMsg("mid")
		m.Header.Set(JSExpectedLastMsgId, "b")
		ack, err := clusterCASPublish(nc, m)
		if err != nil || ack.Error == nil || ack.Error.ErrCode != 10070 || ack.Error.Description != "wrong last msg ID: a" {
			t.Fatalf("mismatch %d: %+v %v", i, ack.Error, err)
		}
	}
	m = nats.NewMsg("mid")
	m.Header.Set(JSExpectedLastMsgId, "a")
	if ack, err := clusterCASPublish(nc, m); err != nil || ack.Error != nil || ack.Seq != 2 {
		t.Fatalf("matching expectation: %+v %v", ack, err)
	}
	checkReplicasAgree(t, c, "MID", 2)
}

func TestJetStreamClusterRetriedMsgIdAfterRejection(t *testing.T) {
	// nats-server 2.10 acks such a retry as a duplicate with seq 0 although
	// nothing was stored; here the retry is judged again.
	c := runJSCluster(t, 3)
	nc, js := jsClient(t, c.servers[2])
	createStream(t, js, jetstream.StreamConfig{Name: "RT", Subjects: []string{"rt"}, Replicas: 3})
	if ack, err := clusterCASPublish(nc, nats.NewMsg("rt")); err != nil || ack.Seq != 1 {
		t.Fatal(ack, err)
	}
	bad := func() *nats.Msg {
		m := nats.NewMsg("rt")
		m.Header.Set(JSMsgId, "retry-me")
		m.Header.Set(JSExpectedLastSubjSeq, "0")
		return m
	}
	for i := 0; i < 3; i++ {
		ack, err := clusterCASPublish(nc, bad())
		if err != nil || ack.Duplicate || ack.Error == nil || ack.Error.ErrCode != 10071 {
			t.Fatalf("retry %d: %+v %v", i, ack, err)
		}
	}
	good := bad()
	good.Header.Set(JSExpectedLastSubjSeq, "1")
	if ack, err := clusterCASPublish(nc, good); err != nil || ack.Error != nil || ack.Duplicate || ack.Seq != 2 {
		t.Fatalf("corrected retry: %+v %v", ack, err)
	}
	if ack, err := clusterCASPublish(nc, good); err != nil || !ack.Duplicate || ack.Seq != 2 {
		t.Fatalf("true duplicate: %+v %v", ack, err)
	}
	checkReplicasAgree(t, c, "RT", 2)
}

func TestJetStreamClusterSnapshotCatchup(t *testing.T) {
	testSnapshotCatchup(t, jetstream.StreamConfig{Name: "SNAP", Subjects: []string{"snap.>"}, Replicas: 3})
}

// TestJetStreamClusterSnapshotCatchupWhileRemoving: with a per-subject
// limit every publish removes a message, so removals can overlap snapshot
// encodes (TestSnapshotCaptureSurvivesRemovals forces that overlap on the
// stores); the replica that installs the snapshots must end up identical.
func TestJetStreamClusterSnapshotCatchupWhileRemoving(t *testing.T) {
	testSnapshotCatchup(t, jetstream.StreamConfig{Name: "SNAP", Subjects: []string{"snap.>"}, Replicas: 3,
		MaxMsgsPerSubject: 5})
}

// TestJetStreamClusterSnapshotCatchupFragmented: with a tiny fragment size
// every snapshot and most append batches cross the routes in RAFTF pieces,
// interleaved with each other (raft_frag.go).
func TestJetStreamClusterSnapshotCatchupFragmented(t *testing.T) {
	setForTest(t, &raftFragSize, 300)
	testSnapshotCatchup(t, jetstream.StreamConfig{Name: "SNAP", Subjects: []string{"snap.>"}, Replicas: 3})
}

// TestJetStreamClusterSnapshotCatchupSpooled: snapshots of more than
// spooledMin bytes are received into spool files and installed from there,
// never whole in memory (raft_spool.go). With full snapshots only, every
// replica's raft log holds a snapshot file that large: the leader sends
// from it and a restart restores from it, both reading it as a stream.
// (With linked snapshots a replica could replace the installed full one by
// its own before the restart, and that path went untested in some runs.)
func TestJetStreamClusterSnapshotCatchupSpooled(t *testing.T) {
	setForTest(t, &raftFragSize, 300)
	setForTest(t, &spooledMin, 2000)
	setForTest(t, &linkedSnapshots, false)
	c := testSnapshotCatchup(t, jetstream.StreamConfig{Name: "SNAP", Subjects: []string{"snap.>"}, Replicas: 3})
	counted := func(get func(*Server) uint64) uint64 {
		n := uint64(0)
		for _, s := range c.servers {
			n += get(s)
		}
		return n
	}
	// The sender counts once its last piece is queued, which may be just
	// after the receiver installed the snapshot.
	waitFor(t, 10*time.Second, "a snapshot sent from a file", func() bool {
		return counted(func(s *Server) uint64 { return s.raft.spooledOut.Load() }) > 0
	})
	spooled := counted(func(s *Server) uint64 { return s.raft.spooledIn.Load() })
	for _, s := range c.servers {
		// A snapshot sent again may still be arriving: its file must go too.
		waitFor(t, 10*time.Second, s.Name()+"'s spool files to go", func() bool {
			ents, _ := os.ReadDir(s.spoolDir())
			return len(ents) == 0
		})
	}
	if spooled == 0 {
		t.Fatal("no snapshot was received into a spool file")
	}
	// Restart every server: each starts from its raft log's snapshot file
	// (full, and larger than spooledMin), read as a stream.
	for i := range c.servers {
		c.servers[i].Shutdown()
		c.servers[i] = runServer(t, c.opts[i])
	}
	_, js := jsClient(t, c.servers[0])
	var info *jetstream.StreamInfo
	waitFor(t, 20*time.Second, "the stream after the restarts", func() bool {
		st, err := js.Stream(ctx(t), "SNAP")
		if err == nil {
			info, err = st.Info(ctx(t))
		}
		return err == nil
	})
	checkReplicasAgree(t, c, "SNAP", info.State.Msgs)
	checkReplicaContents(t, c, "SNAP")
	if counted(func(s *Server) uint64 { return s.raft.restoredFromLog.Load() }) == 0 {
		t.Fatal("no replica restored from its log's snapshot file as a stream")
	}
}

func testSnapshotCatchup(t *testing.T, cfg jetstream.StreamConfig) *jsTestCluster {
	setForTest(t, &snapshotEvery, 100)
	setForTest(t, &snapshotKeepFactor, 0) // the log keeps only 100 entries below a snapshot
	c := runJSCluster(t, 3)
	nc, js := jsClient(t, c.servers[0])
	st := createStream(t, js, cfg)
	// Stop a server that does not lead the stream; the others move on and
	// compact their logs past everything it has.
	down := c.stopFollower(st.CachedInfo().Cluster.Leader)
	for i := 0; i < 1000; i++ {
		m := nats.NewMsg(fmt.Sprintf("snap.k%d", i%10))
		if i%7 == 0 {
			m.Header.Set(JSMsgId, fmt.Sprintf("id-%d", i))
		}
		if ack, err := clusterCASPublish(nc, m); err != nil || ack.Error != nil {
			t.Fatalf("publish %d: %+v %v", i, ack, err)
		}
	}
	del := uint64(500)
	if cfg.MaxMsgsPerSubject > 0 {
		del = 995 // among the last messages of each subject, which the limit keeps
	}
	if err := st.DeleteMsg(ctx(t), del); err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(ctx(t), jetstream.WithPurgeSubject("snap.k3")); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ { // a tail after the last snapshot
		if ack, err := clusterCASPublish(nc, nats.NewMsg("snap.tail")); err != nil || ack.Error != nil {
			t.Fatalf("tail: %+v %v", ack, err)
		}
	}
	c.servers[down] = runServer(t, c.opts[down])
	info, err := st.Info(ctx(t)) // answered by the leader, after its applies
	if err != nil {
		t.Fatal(err)
	}
	checkReplicasAgree(t, c, "SNAP", info.State.Msgs)
	for _, m := range c.replicas("SNAP") {
		if m.jsa.js.srv == c.servers[down] {
			m.mu.Lock()
			received := m.received
			m.mu.Unlock()
			if received == 0 {
				t.Fatalf("the restarted replica caught up without installing a snapshot")
			}
		}
	}
	return c
}

// stopFollower shuts down a server that neither leads the stream (named
// leader) nor is the first (where the tests' clients connect) and returns
// its index.
func (c *jsTestCluster) stopFollower(leader string) int {
	down := -1
	for i, s := range c.servers {
		if s.Name() != leader && s != c.servers[0] {
			down = i
		}
	}
	c.servers[down].Shutdown()
	return down
}

func TestJetStreamClusterR5ConcurrentExpected(t *testing.T) {
	c := runJSCluster(t, 5)
	nc, js := jsClient(t, c.servers[4])
	createStream(t, js, jetstream.StreamConfig{Name: "R5", Subjects: []string{"r5"}, Replicas: 5})
	conns := []*nats.Conn{nc}
	for _, s := range c.servers[:4] {
		conns = append(conns, connectNATS(t, s.ClientURL()))
	}
	var expect uint64
	const rounds, writers = 60, 10
	for round := 0; round < rounds; round++ {
		acks := make([]casAck, writers)
		errs := make([]error, writers)
		var wg sync.WaitGroup
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				m := nats.NewMsg("r5")
				m.Header.Set(JSExpectedLastSubjSeq, fmt.Sprint(expect))
				acks[w], errs[w] = clusterCASPublish(conns[w%len(conns)], m)
			}()
		}
		wg.Wait()
		winners := 0
		for w := range acks {
			switch {
			case errs[w] != nil:
				t.Fatalf("round %d: %v", round, errs[w])
			case acks[w].Error == nil:
				winners++
				expect = acks[w].Seq
			case acks[w].Error.ErrCode != 10071:
				t.Fatalf("round %d: %+v", round, acks[w].Error)
			}
		}
		if winners != 1 {
			t.Fatalf("round %d: %d winners", round, winners)
		}
	}
	checkReplicasAgree(t, c, "R5", rounds)
}

func TestJetStreamClusterPeerRemove(t *testing.T) {
	c := runJSCluster(t, 3)
	nc, js := jsClient(t, c.servers[0])
	st := createStream(t, js, jetstream.StreamConfig{Name: "PR", Subjects: []string{"pr"}, Replicas: 3})
	leader := st.CachedInfo().Cluster.Leader
	var victim string
	for _, s := range c.servers {
		if s.Name() != leader {
			victim = s.Name()
		}
	}
	resp, err := nc.Request("$JS.API.STREAM.PEER.REMOVE.PR", []byte(`{"peer":"`+victim+`"}`), 5*time.Second)
	if err != nil || !strings.Contains(string(resp.Data), `"success":true`) {
		t.Fatalf("peer remove: %v %s", err, resp.Data)
	}
	waitFor(t, 10*time.Second, "the removed server drops its replica", func() bool { return len(c.replicas("PR")) == 2 })
	for _, m := range c.replicas("PR") {
		if m.jsa.js.srv.Name() == victim {
			t.Fatalf("%s still has a replica", victim)
		}
	}
	for i := 0; i < 20; i++ {
		if ack, err := clusterCASPublish(nc, nats.NewMsg("pr")); err != nil || ack.Error != nil {
			t.Fatalf("publish after removal: %+v %v", ack, err)
		}
	}
	checkReplicasAgree(t, c, "PR", 20)
	resp, _ = nc.Request("$JS.API.STREAM.PEER.REMOVE.PR", []byte(`{"peer":"nobody"}`), 5*time.Second)
	if !strings.Contains(string(resp.Data), `"err_code":10040`) {
		t.Fatalf("unknown peer: %s", resp.Data)
	}
}

// TestJetStreamClusterMaxAgeThroughLog: max_age expiry on an R3 stream is
// decided by the leader and applied by every replica from the log; the
// leader used to remove the messages itself while followers kept them.
func TestJetStreamClusterMaxAgeThroughLog(t *testing.T) {
	c := runJSCluster(t, 3)
	nc, js := jsClient(t, c.servers[0])
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "AGE", Subjects: []string{"age.>"}, Replicas: 3,
		MaxAge: 300 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if ack, err := clusterCASPublish(nc, nats.NewMsg(fmt.Sprintf("age.%d", i%4))); err != nil || ack.Error != nil {
			t.Fatalf("publish %d: %+v %v", i, ack, err)
		}
	}
	checkReplicasAgree(t, c, "AGE", 0) // every replica expires all 20, with the same digest
	if ack, err := clusterCASPublish(nc, nats.NewMsg("age.new")); err != nil || ack.Error != nil || ack.Seq != 21 {
		t.Fatalf("publish after expiry: %+v %v", ack, err)
	}
	checkReplicasAgree(t, c, "AGE", 0)
}
