package server

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A rolling upgrade from route protocol 9 to 10: a server not yet
// upgraded (S3, route protocol 9) holds a stream create over the meta
// leader's death and sends its copy to the new leader, an upgraded server.
// A server of 9 relays its clients' publishes on $JSC.MCOPY as well, so
// nothing tells its genuine copy from a forgery: the upgraded leader does
// not run it, and the client times out, as it did before held writes (the
// original reached no leader: nothing is created). The leader says so in
// its log, as an upgrade in progress naming the older server, and counts
// it. An upgraded server's own held write is answered meanwhile.
func TestJetStreamClusterMetaCopyFromOlderPeerNotRun(t *testing.T) {
	c := runJSClusterWith(t, 3, func(i int, o *Options) {
		if i == 2 {
			o.routeProto = routeProtoClusterOnly - 1
		}
	})
	logs := make([]*errLog, len(c.servers))
	for i, s := range c.servers {
		logs[i] = &errLog{}
		s.SetLogger(logs[i], false, false)
	}
	old := c.servers[2]
	c.metaLeaderOff(t, old)
	ml := c.waitMetaLeader()
	survivor := c.servers[0]
	if survivor == ml {
		survivor = c.servers[1]
	}
	ncOld, js := jsClient(t, old)
	createStream(t, js, jetstream.StreamConfig{Name: "A", Subjects: []string{"a"}, Replicas: 3}) // keeps the meta group awake
	ncNew, _ := jsClient(t, survivor)
	send := func(nc *nats.Conn) *nats.Subscription {
		inbox := nats.NewInbox()
		sub, err := nc.SubscribeSync(inbox)
		if err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		return sub
	}
	fromOld, fromNew := send(ncOld), send(ncNew)
	ml.Shutdown()
	for _, s := range []struct {
		nc   *nats.Conn
		sub  *nats.Subscription
		name string
	}{{ncOld, fromOld, "X"}, {ncNew, fromNew, "Y"}} {
		body := mustJSON(t, jetstream.StreamConfig{Name: s.name, Subjects: []string{strings.ToLower(s.name)}, Replicas: 3})
		if err := s.nc.PublishRequest("$JS.API.STREAM.CREATE."+s.name, s.sub.Subject, body); err != nil {
			t.Fatal(err)
		}
	}
	if m, err := fromNew.NextMsg(4500 * time.Millisecond); err != nil || strings.Contains(string(m.Data), `"error"`) {
		t.Fatalf("the upgraded server's held create: %v", err)
	}
	nl := c.waitMetaLeader()
	if nl == old {
		t.Skip("the older server won the election: its copies are its own (not seen in 30 runs)")
	}
	if m, err := fromOld.NextMsg(5 * time.Second); err == nil {
		t.Fatalf("the older server's held create was answered: %s", m.Data)
	}
	jc := nl.js.Load().cluster
	if jc.assignment(globalAccountName, "X") != nil || jc.assignment(globalAccountName, "Y") == nil {
		t.Fatalf("X created: %v, Y created: %v", jc.assignment(globalAccountName, "X") != nil, jc.assignment(globalAccountName, "Y") != nil)
	}
	if n := nl.clusterOnly.notRun.Load(); n == 0 {
		t.Error("no copy counted as not run")
	}
	i := slices.Index(c.servers, nl)
	want := fmt.Sprintf("it came from meta peer %s, of route protocol %d", old.Name(), routeProtoClusterOnly-1)
	if logs[i].warned("held stream write's copy was not run", want, "times out") == "" {
		t.Errorf("%s logged no copy not run for %s", nl.Name(), old.Name())
	}
	if w := logs[i].warned("Dropped a message to cluster-only subject"); w != "" {
		t.Errorf("the older peer's copy logged as a forgery: %s", w)
	}
}
