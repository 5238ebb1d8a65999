package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// metaStoreDir is where server i keeps its meta group.
func (c *jsTestCluster) metaStoreDir(i int) string {
	return filepath.Join(c.opts[i].StoreDir, "jetstream", "_raft_", metaGroupName)
}

// waitPeerProtosKept waits until every server kept every other one's
// route protocol.
func (c *jsTestCluster) waitPeerProtosKept(t *testing.T, want func(name string) int) {
	t.Helper()
	waitFor(t, 10*time.Second, "route protocols kept", func() bool {
		for _, s := range c.servers {
			jc := s.js.Load().cluster
			for _, p := range c.servers {
				if p != s && jc.peerProtoKept(p.Name()) != want(p.Name()) {
					return false
				}
			}
		}
		return true
	})
}

// restartWithPeerDown shuts server down down and restarts server i: it
// has not heard down since it started. It returns the restarted server
// once it knows a meta leader.
func (c *jsTestCluster) restartWithPeerDown(t *testing.T, i, down int) *Server {
	t.Helper()
	c.servers[down].Shutdown()
	c.servers[i].Shutdown()
	c.servers[i] = runServer(t, c.opts[i])
	s := c.servers[i]
	waitFor(t, 10*time.Second, "the restarted server knows a meta leader", func() bool {
		return s.js.Load().cluster.metaLead() != 0
	})
	return s
}

// A server restarted while a meta peer was down had not heard that peer
// since it started and counted it as older: no request ids, no held
// writes, until the peer came back (a cluster started with one meta peer
// down never had them). The protocol each peer last advertised is kept in
// the meta directory, so the restarted server still uses ids and holds
// writes.
func TestJetStreamClusterMetaIDsKeptOverRestart(t *testing.T) {
	c := runJSCluster(t, 3)
	c.waitMetaLeader()
	c.waitPeerProtosKept(t, func(string) int { return routeProto })
	s := c.restartWithPeerDown(t, 0, 2)
	jc := s.js.Load().cluster
	if s.routeProtoSeen(c.servers[2].Name()) != 0 {
		t.Fatal("the restarted server heard the peer that is down")
	}
	if !jc.metaIDsSupported() {
		t.Fatalf("no request ids on %s after its restart while meta peer %s is down", s.Name(), c.servers[2].Name())
	}
	ml := c.waitMetaLeader()
	r := &apiRequest{jsa: s.js.Load().account(globalAccountName), reply: "_INBOX.x", subject: "STREAM.CREATE.P"}
	if ml != s && r.newMetaHold("STREAM.CREATE.", raftID(ml.Name())) == nil {
		t.Error("a create not held")
	}
	// Writes through it carry ids, and the cluster works as before.
	_, js := jsClient(t, s)
	createStream(t, js, jetstream.StreamConfig{Name: "KEPT", Subjects: []string{"kept"}, Replicas: 3})
}

// Safety is kept: a peer that last advertised an older protocol counts as
// older after a restart too (kept), and one never heard at all (nothing
// kept) still counts as older.
func TestJetStreamClusterMetaIDsOffOlderPeerKept(t *testing.T) {
	c := runJSClusterWith(t, 3, func(i int, o *Options) {
		if i == 2 {
			o.routeProto = routeProtoMetaIDs - 1
		}
	})
	c.waitMetaLeader()
	older := c.servers[2].Name()
	c.waitPeerProtosKept(t, func(name string) int {
		if name == older {
			return routeProtoMetaIDs - 1
		}
		return routeProto
	})
	s := c.restartWithPeerDown(t, 0, 2)
	if got := s.js.Load().cluster.peerProtoKept(older); got != routeProtoMetaIDs-1 {
		t.Fatalf("kept route protocol of %s: %d", older, got)
	}
	if s.js.Load().cluster.metaIDsSupported() {
		t.Error("request ids on with an older meta peer down (kept as older)")
	}

	// Nothing kept: never heard, older.
	c.servers[1].Shutdown()
	if err := os.Remove(filepath.Join(c.metaStoreDir(1), peerProtosFile)); err != nil {
		t.Fatal(err)
	}
	c.servers[1] = runServer(t, c.opts[1])
	jc := c.servers[1].js.Load().cluster
	waitFor(t, 10*time.Second, "S2 started its meta group", func() bool { return jc.metaLead() != 0 })
	if jc.peerProtoKept(older) != 0 || jc.metaIDsSupported() {
		t.Errorf("a peer never heard (kept %d) counts as supporting ids", jc.peerProtoKept(older))
	}
}

// protos.json kept every server name whose route ever connected, so it
// grew with each server replaced under a new name. Only meta peers are
// kept: a name that is not one (GONE, written into the file of a server
// while it was down) is gone from the file and from memory once the
// restarted server's meta group starts.
func TestJetStreamClusterMetaProtosPruned(t *testing.T) {
	c := runJSCluster(t, 3)
	c.waitMetaLeader()
	c.waitPeerProtosKept(t, func(string) int { return routeProto })
	c.servers[0].Shutdown()
	file := filepath.Join(c.metaStoreDir(0), peerProtosFile)
	kept := map[string]int{"GONE": routeProto}
	for _, s := range c.servers[1:] {
		kept[s.Name()] = routeProto
	}
	if err := os.WriteFile(file, mustJSON(t, kept), 0o644); err != nil {
		t.Fatal(err)
	}
	c.servers[0] = runServer(t, c.opts[0])
	jc := c.servers[0].js.Load().cluster
	waitFor(t, 10*time.Second, "GONE dropped from "+peerProtosFile, func() bool {
		var got map[string]int
		b, err := os.ReadFile(file)
		if err != nil || json.Unmarshal(b, &got) != nil {
			return false
		}
		_, gone := got["GONE"]
		return !gone && len(got) == 2 && jc.peerProtoKept("GONE") == 0
	})
	for _, s := range c.servers[1:] {
		if v := jc.peerProtoKept(s.Name()); v != routeProto {
			t.Errorf("meta peer %s kept as %d", s.Name(), v)
		}
	}

	// A server that is not a meta peer connects a route (here one without
	// JetStream): nothing is kept of it.
	o := testOptions()
	o.ServerName, o.Cluster.Name, o.Cluster.Host, o.Cluster.Port = "S9", "JSC", "127.0.0.1", freePort(t)
	o.Routes = c.opts[0].Routes
	s9 := runServer(t, o)
	waitForMesh(t, append(slices.Clone(c.servers), s9))
	if v := jc.peerProtoKept("S9"); v != 0 {
		t.Errorf("S9, not a meta peer, kept as %d", v)
	}
}
