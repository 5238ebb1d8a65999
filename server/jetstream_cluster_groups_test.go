package server

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Idle replicated streams cost little: every group ticks on the server's
// one raft clock, so heartbeats of all groups share each route's writes.
// With a timer per group and a heartbeat every tick, 30 idle R3 streams
// made a server write to its routes more than a thousand times a second.
func TestJetStreamClusterIdleGroupsShareRouteWrites(t *testing.T) {
	const streams = 30
	c := runJSCluster(t, 3)
	nc := connectNATS(t, c.servers[0].ClientURL())
	js, _ := jetstream.New(nc)
	for i := range streams {
		createStream(t, js, jetstream.StreamConfig{Name: fmt.Sprintf("IDLE%d", i),
			Subjects: []string{fmt.Sprintf("idle.%d", i)}, Replicas: 3, Storage: jetstream.MemoryStorage})
	}
	waitFor(t, 20*time.Second, "a leader in every group", func() bool {
		for i := range streams {
			info, err := js.Stream(ctx(t), fmt.Sprintf("IDLE%d", i))
			if err != nil || info.CachedInfo().Cluster == nil || info.CachedInfo().Cluster.Leader == "" {
				return false
			}
		}
		return true
	})
	writes := func() (n int64) {
		for _, r := range c.servers[0].routeList() {
			n += r.c.out.writes.Load()
		}
		return n
	}
	before, start := writes(), time.Now()
	time.Sleep(2 * time.Second) // idle: counting what the heartbeats cost
	perSec := float64(writes()-before) / time.Since(start).Seconds()
	t.Logf("%.0f route writes/s for %d idle groups", perSec, streams+1)
	// Two routes, 20 ticks a second: a heartbeat batch and a response
	// batch per route and tick, with room for goroutines interleaving
	// (about 300 here; timers per group made about 1,200).
	if limit := float64(2 * 2 * 20 * 8); perSec > limit {
		t.Fatalf("%.0f route writes/s for idle groups, want at most %.0f", perSec, limit)
	}
}

// A new stream's group does not wait an election timeout (0.5-1 s) for
// its first leader: the member the assignment names campaigns at once, so
// creating a stream takes milliseconds, and leaders spread over servers.
func TestJetStreamClusterNewStreamElectsAtOnce(t *testing.T) {
	c := runJSCluster(t, 3)
	nc := connectNATS(t, c.servers[1].ClientURL())
	js, _ := jetstream.New(nc)
	leaders := map[string]int{}
	designated := 0
	for i := range 9 {
		name := fmt.Sprintf("NEW%d", i)
		start := time.Now()
		createStream(t, js, jetstream.StreamConfig{Name: name, Subjects: []string{"new." + name}, Replicas: 3})
		took := time.Since(start)
		// The answer may come before server 0 applied the create (it
		// need not lead the meta group): wait for its view.
		var sa *streamAssignment
		var leader string
		waitFor(t, 5*time.Second, "assignment and leader of "+name, func() bool {
			jc := c.servers[0].js.Load().cluster
			sa, leader = jc.assignment(globalAccountName, name), jc.streamLeader(globalAccountName, name)
			return sa != nil && leader != ""
		})
		t.Logf("%s created in %v, led by %s", name, took, leader)
		if leader == sa.firstLeader() {
			designated++
		}
		leaders[leader]++
	}
	// By chance (each member timing out first) about 3 of 9; one slow
	// election on a loaded machine is allowed.
	if designated < 8 {
		t.Fatalf("only %d of 9 new streams led by the member named to campaign at once", designated)
	}
	if len(leaders) < 2 {
		t.Fatalf("every new stream led by the same server: %v", leaders)
	}
}

// STREAM.LIST shows every stream as its leader sees it: which replicas are
// current and the state, whichever server leads it (the meta leader used to
// fill in replicas only for the streams it led itself, so `nats stream
// report` flagged the others' replicas as not current).
func TestJetStreamClusterStreamListFromLeaders(t *testing.T) {
	c := runJSCluster(t, 3)
	nc := connectNATS(t, c.servers[2].ClientURL())
	js, _ := jetstream.New(nc)
	const streams = 6
	createR3Streams(t, js, "L", "list.", streams, func(i int) int { return i + 1 })
	var infos []*jetstream.StreamInfo
	waitFor(t, 10*time.Second, "every replica current in the list", func() bool {
		infos = nil
		l := js.ListStreams(ctx(t))
		for si := range l.Info() {
			infos = append(infos, si)
		}
		if l.Err() != nil || len(infos) != streams {
			return false
		}
		for _, si := range infos {
			if si.Cluster == nil || si.Cluster.Leader == "" || len(si.Cluster.Replicas) != 2 {
				return false
			}
			for _, p := range si.Cluster.Replicas {
				if !p.Current || p.Offline || p.Active <= 0 {
					return false // Active 0 is "not seen" to the nats CLI
				}
			}
		}
		return true
	})
	meta := c.waitMetaLeader().Name()
	elsewhere := 0
	for i, si := range infos {
		if want := fmt.Sprintf("L%d", i); si.Config.Name != want || si.State.Msgs != uint64(i+1) {
			t.Fatalf("list entry %d: %s with %d messages, want %s with %d", i, si.Config.Name, si.State.Msgs, want, i+1)
		}
		if si.Cluster.Leader != meta {
			elsewhere++
		}
	}
	if elsewhere == 0 {
		// First leaders are spread by a hash; all six on the meta leader
		// is unlikely but possible, and then the test proves nothing.
		t.Skipf("every stream is led by the meta leader %s", meta)
	}
	// A client of the meta leader that sends more right after its request
	// still gets the list on its reply subject (which pointed into the
	// reader's buffer, overwritten by the next read).
	direct := c.serverNamed(meta)
	dc := connectNATS(t, direct.ClientURL())
	inbox := nats.NewInbox()
	replies, _ := dc.SubscribeSync(inbox + ".*")
	// The meta leader's questions to the stream leaders are not the
	// account's API traffic: a subscriber of $JS.API.> (on the same
	// connection, so anything sent to it before the list has arrived
	// with it) sees only the client's own request.
	spy, _ := dc.SubscribeSync("$JS.API.>")
	dc.Flush()
	dc.PublishRequest("$JS.API.STREAM.LIST", inbox+".list", []byte("{}"))
	for i := range 200 {
		dc.PublishRequest("junk.subject.long.enough.to.cover."+fmt.Sprint(i), inbox+".junk.overwriting.the.buffer", nil)
	}
	dc.Flush()
	m, err := replies.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatalf("no list answer: %v", err)
	}
	if m.Subject != inbox+".list" || !strings.Contains(string(m.Data), `.stream_list_response"`) {
		t.Fatalf("list answer on %q: %.200s", m.Subject, m.Data)
	}
	for {
		sm, err := spy.NextMsg(0)
		if err != nil {
			break
		}
		if sm.Subject != "$JS.API.STREAM.LIST" {
			t.Fatalf("an account subscriber of $JS.API.> saw %s", sm.Subject)
		}
	}
	// The subject filter and paging work as on a single server.
	l := js.ListStreams(ctx(t), jetstream.WithStreamListSubject("list.L3"))
	var names []string
	for si := range l.Info() {
		names = append(names, si.Config.Name)
	}
	if l.Err() != nil || len(names) != 1 || names[0] != "L3" {
		t.Fatalf("filtered list: %v %v", names, l.Err())
	}
}

// TestJetStreamClusterStreamListOlderLeader: a stream led by a server that
// announces route protocol 3 (before $JSC.SI) is asked on its account's
// STREAM.INFO, as in a rolling upgrade; every other leader on $JSC.SI.
// The list is complete either way.
func TestJetStreamClusterStreamListOlderLeader(t *testing.T) {
	c := runJSClusterWith(t, 3, func(i int, o *Options) {
		if i == 1 {
			o.routeProto = 3
		}
	})
	old := c.servers[1].Name()
	nc := connectNATS(t, c.servers[0].ClientURL())
	js, _ := jetstream.New(nc)
	const streams = 6
	createR3Streams(t, js, "O", "old.", streams, func(int) int { return 1 })
	// The questions come from the meta leader: it must not be the old one.
	for c.waitMetaLeader().Name() == old {
		c.stepDownMeta() // no system user here: $JS.API.META.LEADER.STEPDOWN is theirs
		waitFor(t, 10*time.Second, "a new meta leader", func() bool { return c.waitMetaLeader().Name() != old })
	}
	meta := c.waitMetaLeader()
	leaderOf := func(name, not string) string {
		var l string
		waitFor(t, 10*time.Second, "a leader for "+name, func() bool {
			si, err := js.Stream(ctx(t), name)
			if err != nil || si.CachedInfo().Cluster == nil {
				return false
			}
			l = si.CachedInfo().Cluster.Leader
			return l != "" && l != not
		})
		return l
	}
	// O0 led by the old server and O1 by another: stepdowns move them.
	for _, want := range []struct {
		name  string
		onOld bool
	}{{"O0", true}, {"O1", false}} {
		for i := 0; (leaderOf(want.name, "") == old) != want.onOld; i++ {
			if i == 30 {
				t.Fatalf("%s: no leader where wanted after 30 stepdowns", want.name)
			}
			prev := leaderOf(want.name, "")
			nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+want.name, nil, 5*time.Second)
			leaderOf(want.name, prev)
		}
	}
	leaders := map[string]string{}
	wantInfo := map[string]bool{}
	for i := range streams {
		name := fmt.Sprintf("O%d", i)
		if leaders[name] = leaderOf(name, ""); leaders[name] == old {
			wantInfo["$JS.API.STREAM.INFO."+name] = true
		}
	}
	dc := connectNATS(t, meta.ClientURL())
	spy, _ := dc.SubscribeSync("$JS.API.>")
	dc.Flush()
	resp, err := dc.Request("$JS.API.STREAM.LIST", []byte("{}"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Streams []*jetstream.StreamInfo `json:"streams"`
		Missing []string                `json:"missing"`
	}
	if err := json.Unmarshal(resp.Data, &list); err != nil || len(list.Streams) != streams || len(list.Missing) != 0 {
		t.Fatalf("list: %d streams, missing %v, err %v: %.300s", len(list.Streams), list.Missing, err, resp.Data)
	}
	for _, si := range list.Streams {
		if si.State.Msgs != 1 || si.Cluster == nil || si.Cluster.Leader != leaders[si.Config.Name] {
			t.Fatalf("%s: %d messages, cluster %+v, want 1 and leader %s", si.Config.Name, si.State.Msgs, si.Cluster, leaders[si.Config.Name])
		}
	}
	seen := map[string]bool{}
	for {
		sm, err := spy.NextMsg(0)
		if err != nil {
			break
		}
		if sm.Subject != "$JS.API.STREAM.LIST" {
			seen[sm.Subject] = true
		}
	}
	if !maps.Equal(seen, wantInfo) {
		t.Fatalf("account API questions %v, want %v (leaders %v)", seen, wantInfo, leaders)
	}
}

// createR3Streams creates the R3 streams <name><i> for i < n, each on the
// subject <subj><name><i> with msgs(i) messages.
func createR3Streams(t *testing.T, js jetstream.JetStream, name, subj string, n int, msgs func(i int) int) {
	t.Helper()
	for i := range n {
		stream := fmt.Sprintf("%s%d", name, i)
		createStream(t, js, jetstream.StreamConfig{Name: stream, Subjects: []string{subj + stream}, Replicas: 3})
		for range msgs(i) {
			if _, err := js.Publish(ctx(t), subj+stream, []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
	}
}
