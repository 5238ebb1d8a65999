package server

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// A replica that discards its damaged state (stream_repair.go) keeps no
// membership: it started its group with the members of the assignment it
// was started from, which at a restart is the stream's create replayed from
// the meta log, so it came back counting its original members, a server
// removed since among them. It learns the members from the leader, as a
// joining replica does. R3 on 4 servers: R is removed (N replaces it), D's
// snapshot block is damaged while it is down, and D restarts while the
// leader and N are down: it must never count R as a member.
func TestJetStreamClusterRepairedReplicaNoOriginalMembers(t *testing.T) {
	setForTest(t, &snapshotEvery, 100)
	setForTest(t, &fileStoreBlockSize, 64<<10)
	c := runJSCluster(t, 4)
	nc, js := jsClient(t, c.servers[0])
	st := createStream(t, js, jetstream.StreamConfig{Name: "RM", Subjects: []string{"rm.>"}, Replicas: 3, Storage: jetstream.FileStorage})
	for i := 1; i <= repairMsgs; i++ {
		if _, err := js.Publish(ctx(t), fmt.Sprintf("rm.%d", i%7), repairData(i)); err != nil {
			t.Fatal(err)
		}
	}
	info := st.CachedInfo()
	lead := info.Cluster.Leader
	var members []string
	for _, p := range info.Cluster.Replicas {
		members = append(members, p.Name)
	}
	if len(members) != 2 {
		t.Fatalf("replicas %v", members)
	}
	removed, damaged := members[0], members[1]
	resp, err := nc.Request("$JS.API.STREAM.PEER.REMOVE.RM", []byte(`{"peer":"`+removed+`"}`), 5*time.Second)
	if err != nil || !strings.Contains(string(resp.Data), `"success":true`) {
		t.Fatalf("peer remove: %v %s", err, resp.Data)
	}
	nc.Close()
	var added string // the replacement the placement names
	waitFor(t, 10*time.Second, "the placement without "+removed, func() bool {
		sa := c.servers[0].js.Load().cluster.assignment(globalAccountName, "RM")
		if sa == nil || slices.Contains(sa.Peers, removed) {
			return false
		}
		for _, p := range sa.Peers {
			if p != lead && p != damaged {
				added = p
			}
		}
		return added != ""
	})
	c.waitAllApplied(t, "RM", 3, repairMsgs, 20*time.Second)
	want := []raft.ID{raftID(lead), raftID(damaged), raftID(added)}
	slices.Sort(want)
	c.logViewsOnFailure(t, "RM")
	waitFor(t, 20*time.Second, fmt.Sprintf("every replica's group %v (leader %s, removed %s)", want, lead, removed), func() bool {
		for _, m := range c.replicas("RM") { // the removed one may not have left yet: it is not told
			if m.jsa.js.srv.Name() == removed {
				continue
			}
			if !groupPeersAre(m, want) {
				return false
			}
		}
		return true
	})
	idx := func(name string) int {
		return slices.IndexFunc(c.servers, func(s *Server) bool { return s.Name() == name })
	}
	d := idx(damaged)
	c.servers[d].Shutdown()
	p := repairBlock(t, filepath.Join(c.opts[d].StoreDir, "jetstream"))
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x5a
	writeInPlace(t, p, b)
	for _, name := range []string{lead, added} {
		c.servers[idx(name)].Shutdown()
	}
	c.servers[d] = runServer(t, c.opts[d])
	countsRemoved := func() bool {
		m := c.servers[d].js.Load().account(globalAccountName).lookup("RM")
		if m == nil {
			return false
		}
		g := m.groupNow()
		return g != nil && slices.Contains(g.statusSnapshot().Peers, raftID(removed))
	}
	deadline := time.Now().Add(noLeaderWindow())
	for time.Now().Before(deadline) {
		if countsRemoved() {
			t.Fatalf("%s's repaired replica counts %s, removed from the stream, as a member", damaged, removed)
		}
		time.Sleep(20 * time.Millisecond) // polling the replica's membership
	}
	for _, name := range []string{lead, added} {
		c.servers[idx(name)] = runServer(t, c.opts[idx(name)])
	}
	c.waitMetaLeader()
	c.waitAllApplied(t, "RM", 3, repairMsgs, 30*time.Second)
	waitFor(t, 30*time.Second, damaged+" repaired, counting the current members", func() bool {
		m := c.servers[d].js.Load().account(globalAccountName).lookup("RM")
		if m == nil {
			return false
		}
		m.mu.Lock()
		g, gdir := m.group, m.groupDir
		m.mu.Unlock()
		_, err := os.Stat(filepath.Join(gdir, repairMarker))
		if g == nil || !os.IsNotExist(err) {
			return false
		}
		peers := g.statusSnapshot().Peers
		return len(peers) == 3 && !slices.Contains(peers, raftID(removed))
	})
}
