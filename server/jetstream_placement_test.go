package server

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestJetStreamClusterPlacementByTags(t *testing.T) {
	tags := [][]string{{"az:1", "ssd"}, {"az:2"}, {"AZ:1"}}
	c := runJSClusterWith(t, 3, func(i int, o *Options) { o.Tags = tags[i] })
	waitTagsKnown(t, c)
	nc, js := jsClient(t, c.servers[0])
	create := func(name string, replicas int, pl *jetstream.Placement) (*jetstream.StreamInfo, error) {
		st, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: name, Subjects: []string{strings.ToLower(name) + ".>"},
			Replicas: replicas, Placement: pl})
		if err != nil {
			return nil, err
		}
		return st.CachedInfo(), nil
	}
	placed := func(si *jetstream.StreamInfo) []string {
		out := []string{si.Cluster.Leader}
		for _, r := range si.Cluster.Replicas {
			out = append(out, r.Name)
		}
		slices.Sort(out)
		return out
	}
	si, err := create("AZ2", 1, &jetstream.Placement{Tags: []string{"az:2"}})
	if err != nil || !slices.Equal(placed(si), []string{"S2"}) {
		t.Fatalf("az:2 placement: %v %v", err, si)
	}
	si, err = create("AZ1", 2, &jetstream.Placement{Tags: []string{"az:1"}}) // case-insensitive
	if err != nil || !slices.Equal(placed(si), []string{"S1", "S3"}) {
		t.Fatalf("az:1 placement: %v %+v", err, si)
	}
	si, err = create("SSD", 1, &jetstream.Placement{Cluster: "JSC", Tags: []string{"ssd", "az:1"}})
	if err != nil || !slices.Equal(placed(si), []string{"S1"}) {
		t.Fatalf("ssd placement: %v %+v", err, si)
	}
	for _, pl := range []*jetstream.Placement{{Tags: []string{"az:3"}}, {Tags: []string{"az:2"}, Cluster: "elsewhere"}} {
		resp, err := nc.Request("$JS.API.STREAM.CREATE.BAD", mustJSON(t, map[string]any{
			"name": "BAD", "subjects": []string{"bad"}, "num_replicas": 1, "placement": pl}), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(resp.Data), `"err_code":10005`) {
			t.Fatalf("placement %+v: %s", pl, resp.Data)
		}
	}
	if _, err := create("TOOMANY", 2, &jetstream.Placement{Tags: []string{"az:2"}}); apiCode(err) != 10005 {
		t.Fatalf("two replicas on one az:2 server: %v", err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestJetStreamClusterPeerReplacement: on five servers, removing a peer of
// an R3 stream puts a replacement in its place, which catches up with
// every message (through the log or a snapshot) and then counts for quorum.
func TestJetStreamClusterPeerReplacement(t *testing.T) {
	c := runJSCluster(t, 5)
	nc, js := jsClient(t, c.servers[0])
	st := createStream(t, js, jetstream.StreamConfig{Name: "RP", Subjects: []string{"rp.>"}, Replicas: 3})
	for i := 0; i < 50; i++ {
		if ack, err := clusterCASPublish(nc, nats.NewMsg("rp.a")); err != nil || ack.Error != nil {
			t.Fatalf("publish: %+v %v", ack, err)
		}
	}
	info := st.CachedInfo()
	before := []string{info.Cluster.Leader}
	var victim string
	for _, r := range info.Cluster.Replicas {
		before = append(before, r.Name)
		victim = r.Name
	}
	resp, err := nc.Request("$JS.API.STREAM.PEER.REMOVE.RP", []byte(`{"peer":"`+victim+`"}`), 5*time.Second)
	if err != nil || !strings.Contains(string(resp.Data), `"success":true`) {
		t.Fatalf("peer remove: %v %s", err, resp.Data)
	}
	var peers []string
	waitFor(t, 10*time.Second, "a replacement in the placement", func() bool {
		sa := c.servers[0].js.Load().cluster.assignment(globalAccountName, "RP")
		peers = sa.Peers
		return len(peers) == 3 && !slices.Contains(peers, victim)
	})
	var added string
	for _, p := range peers {
		if !slices.Contains(before, p) {
			added = p
		}
	}
	if added == "" {
		t.Fatalf("no new server in %v (before %v)", peers, before)
	}
	for i := 0; i < 50; i++ {
		if ack, err := clusterCASPublish(nc, nats.NewMsg("rp.b")); err != nil || ack.Error != nil {
			t.Fatalf("publish after replacement: %+v %v", ack, err)
		}
	}
	checkReplicasAgree(t, c, "RP", 100)
	// The group's membership follows the placement on every replica.
	want := make([]uint64, 0, 3)
	for _, p := range peers {
		want = append(want, uint64(raftID(p)))
	}
	slices.Sort(want)
	waitFor(t, 10*time.Second, "raft membership = placement", func() bool {
		for _, m := range c.replicas("RP") {
			g := m.groupNow()
			var got []uint64
			for _, id := range g.statusSnapshot().Peers {
				got = append(got, uint64(id))
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				return false
			}
		}
		return true
	})
	// The new member counts: with the other original replica stopped, the
	// leader and the new replica still make a quorum. The client uses the
	// removed server, which stays up.
	via := c.serverNamed(victim)
	nc2, _ := jsClient(t, via)
	leader := leaderOf(t, nc2, "RP")
	for i, s := range c.servers {
		if s.Name() != added && s.Name() != leader && slices.Contains(peers, s.Name()) {
			c.servers[i].Shutdown()
			break
		}
	}
	for i := 0; i < 10; i++ {
		if ack, err := clusterCASPublish(nc2, nats.NewMsg("rp.c")); err != nil || ack.Error != nil {
			t.Fatalf("publish with one original replica down: %+v %v", ack, err)
		}
	}
}

func leaderOf(t *testing.T, nc *nats.Conn, stream string) string {
	t.Helper()
	var leader string
	waitFor(t, 10*time.Second, "a leader of "+stream, func() bool {
		l, code := infoOutcome(t, nc, stream)
		leader = l
		return code == 0 && l != ""
	})
	return leader
}

// TestJetStreamClusterPeerRemoveLeader removes the stream's leader, on a
// stream whose leader is not the meta leader (the meta leader answers the
// request): the leader hands over before dropping its replica, the stream
// keeps a leader and takes publishes, and the two others agree.
func TestJetStreamClusterPeerRemoveLeader(t *testing.T) {
	c := runJSCluster(t, 3)
	meta := c.waitMetaLeader()
	nc, js := jsClient(t, meta)
	st := createStream(t, js, jetstream.StreamConfig{Name: "PRL", Subjects: []string{"prl"}, Replicas: 3})
	leader := st.CachedInfo().Cluster.Leader
	for leader == meta.Name() {
		stepdownStream(t, nc, "PRL")
		waitFor(t, 10*time.Second, "another stream leader", func() bool {
			l, code := infoOutcome(t, nc, "PRL")
			if code == 0 && l != "" && l != leader {
				leader = l
				return true
			}
			return false
		})
	}
	for i := 0; i < 20; i++ {
		if ack, err := clusterCASPublish(nc, nats.NewMsg("prl")); err != nil || ack.Error != nil {
			t.Fatalf("publish: %+v %v", ack, err)
		}
	}
	resp, err := nc.Request("$JS.API.STREAM.PEER.REMOVE.PRL", []byte(`{"peer":"`+leader+`"}`), 5*time.Second)
	if err != nil || !strings.Contains(string(resp.Data), `"success":true`) {
		t.Fatalf("peer remove of the leader %s (meta leader %s): %v %s", leader, meta.Name(), err, resp.Data)
	}
	waitFor(t, 15*time.Second, "the removed leader's replica gone", func() bool {
		for _, m := range c.replicas("PRL") {
			if m.jsa.js.srv.Name() == leader {
				return false
			}
		}
		return len(c.replicas("PRL")) == 2
	})
	next := leaderOf(t, nc, "PRL")
	if next == leader {
		t.Fatalf("%s still leads after its removal", leader)
	}
	for i := 0; i < 20; i++ {
		if ack, err := clusterCASPublish(nc, nats.NewMsg("prl")); err != nil || ack.Error != nil {
			t.Fatalf("publish after the removal: %+v %v", ack, err)
		}
	}
	checkReplicasAgree(t, c, "PRL", 40)
}

// TestJetStreamClusterTwoPeerRemovals: two removals sent back to back both
// take effect (each is applied relative to the placement of its time).
func TestJetStreamClusterTwoPeerRemovals(t *testing.T) {
	c := runJSCluster(t, 5)
	nc, js := jsClient(t, c.servers[0])
	st := createStream(t, js, jetstream.StreamConfig{Name: "TWO", Subjects: []string{"two"}, Replicas: 3})
	var victims []string
	for _, r := range st.CachedInfo().Cluster.Replicas {
		victims = append(victims, r.Name)
	}
	for _, v := range victims {
		resp, err := nc.Request("$JS.API.STREAM.PEER.REMOVE.TWO", []byte(`{"peer":"`+v+`"}`), 5*time.Second)
		if err != nil || !strings.Contains(string(resp.Data), `"success":true`) {
			t.Fatalf("remove %s: %v %s", v, err, resp.Data)
		}
	}
	waitFor(t, 10*time.Second, "both removed, two replacements", func() bool {
		sa := c.servers[0].js.Load().cluster.assignment(globalAccountName, "TWO")
		return len(sa.Peers) == 3 && !slices.Contains(sa.Peers, victims[0]) && !slices.Contains(sa.Peers, victims[1])
	})
	for i := 0; i < 10; i++ {
		if ack, err := clusterCASPublish(nc, nats.NewMsg("two")); err != nil || ack.Error != nil {
			t.Fatalf("publish: %+v %v", ack, err)
		}
	}
	checkReplicasAgree(t, c, "TWO", 10)
}

// TestJetStreamClusterPlacementCountsKept: the per-server placement counts
// that placement reads (jsCluster.placed, kept by the meta apply instead of
// a scan of every assignment per create) match a recount on every server
// after creates, a same-config re-create, an R1 to R3 scale, deletes and a
// restart from meta snapshots; and R1 streams still go to the least loaded server.
func TestJetStreamClusterPlacementCountsKept(t *testing.T) {
	old := metaSnapshotEvery
	metaSnapshotEvery = 8 // the followers install snapshots along the way
	t.Cleanup(func() { metaSnapshotEvery = old })
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	streams := 0
	recount := func(jc *jsCluster) map[string]int {
		out := map[string]int{}
		for _, acc := range jc.streams {
			for _, sa := range acc {
				for _, p := range sa.Peers {
					out[p]++
				}
			}
		}
		return out
	}
	check := func(what string) {
		t.Helper()
		for _, s := range c.servers {
			s := s
			waitFor(t, 10*time.Second, s.Name()+"'s placement counts after "+what, func() bool {
				jc := s.js.Load().cluster
				jc.mu.Lock()
				defer jc.mu.Unlock()
				want := recount(jc)
				return len(jc.placed) == len(want) && maps.Equal(jc.placed, want) &&
					len(jc.streams[globalAccountName]) == streams
			})
		}
	}
	for i := 0; i < 6; i++ {
		cfg := jetstream.StreamConfig{Name: "R1_" + strconv.Itoa(i), Subjects: []string{"r1." + strconv.Itoa(i)}}
		createStream(t, js, cfg)
		streams++
		createStream(t, js, cfg) // the same config again: no change
	}
	check("R1 creates")
	jc := c.servers[0].js.Load().cluster
	jc.mu.Lock()
	counts := maps.Clone(jc.placed)
	jc.mu.Unlock()
	for _, s := range c.servers {
		if counts[s.Name()] != 2 {
			t.Fatalf("6 R1 streams over 3 servers placed %v, want 2 each", counts)
		}
	}
	for i := 0; i < 3; i++ {
		createStream(t, js, jetstream.StreamConfig{Name: "R3_" + strconv.Itoa(i), Subjects: []string{"r3." + strconv.Itoa(i)}, Replicas: 3})
		streams++
	}
	if _, err := js.UpdateStream(ctx(t), jetstream.StreamConfig{Name: "R1_0", Subjects: []string{"r1.0"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	check("R3 creates and a scale up")
	for _, name := range []string{"R1_1", "R3_1"} {
		if err := js.DeleteStream(ctx(t), name); err != nil {
			t.Fatal(err)
		}
		streams--
	}
	check("deletes")
	c.restartAll(t) // the assignments come back from meta snapshots and logs
	check("a restart")
}
