package server

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A client that uses one fixed reply subject for its API calls (legal
// NATS: PublishRequest with its own subscription) creates a stream,
// deletes it, and creates it again with the same body at once. The second
// create carries the first one's request id; it was skipped at apply (only
// copies of held requests may be) and answered "created" with no stream.
// The same for a second delete of a stream created again: answered
// success, the stream remained. (Found by review; 5 of 5 failed before.)
func TestJetStreamClusterMetaFixedReplyRepeatsApplied(t *testing.T) {
	c := runJSCluster(t, 3)
	ml := c.waitMetaLeader()
	nc, js := jsClient(t, ml)
	const reply = "my.fixed.reply"
	sub, err := nc.SubscribeSync(reply)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	call := func(subject string, body []byte) *apiResponse {
		t.Helper()
		if err := nc.PublishRequest(subject, reply, body); err != nil {
			t.Fatal(err)
		}
		m, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("%s unanswered: %v", subject, err)
		}
		var r apiResponse
		if err := json.Unmarshal(m.Data, &r); err != nil {
			t.Fatal(err)
		}
		return &r
	}
	body, _ := json.Marshal(StreamConfig{Name: "FX", Subjects: []string{"fx"}, Replicas: 3, Storage: FileStorage})
	if r := call("$JS.API.STREAM.CREATE.FX", body); r.Error != nil {
		t.Fatalf("first create: %+v", r.Error)
	}
	if err := js.DeleteStream(ctx(t), "FX"); err != nil {
		t.Fatal(err)
	}
	r := call("$JS.API.STREAM.CREATE.FX", body)
	if _, err := js.Stream(ctx(t), "FX"); err != nil {
		t.Errorf("second create answered error=%v, but the stream is not there: %v", r.Error, err)
	}

	createStream(t, js, jetstream.StreamConfig{Name: "FD", Subjects: []string{"fd"}, Replicas: 3})
	if r := call("$JS.API.STREAM.DELETE.FD", nil); r.Error != nil {
		t.Fatalf("first delete: %+v", r.Error)
	}
	createStream(t, js, jetstream.StreamConfig{Name: "FD", Subjects: []string{"fd"}, Replicas: 3})
	r = call("$JS.API.STREAM.DELETE.FD", nil)
	if _, err := js.Stream(ctx(t), "FD"); err == nil {
		t.Errorf("second delete answered error=%v, but the stream is still there", r.Error)
	}
}

// The gate for request ids and held writes counted a meta peer of an
// older route protocol only while its route was up: with the older server
// down (restarting, partitioned), ids were used and creates held, and a
// copy proposed then would be applied again by that server when it
// catches up (it skips nothing), while the others skipped it. The peer's
// last advertised protocol now counts while it is down.
func TestJetStreamClusterMetaIDsOffWhileOlderPeerDown(t *testing.T) {
	c := runJSClusterWith(t, 3, func(i int, o *Options) {
		if i == 2 {
			o.routeProto = routeProtoMetaIDs - 1
		}
	})
	c.waitMetaLeader()
	c.servers[2].Shutdown()
	ml := c.waitMetaLeader()
	via := c.notMetaLeader(ml)
	waitFor(t, 10*time.Second, "older peer's route gone", func() bool {
		return via.js.Load().cluster.routeProtoOf(c.servers[2].Name()) == 0
	})
	jc := via.js.Load().cluster
	if jc.metaIDsSupported() {
		t.Errorf("request ids in use while meta peer %s (route protocol %d) is a member, merely down",
			c.servers[2].Name(), routeProtoMetaIDs-1)
	}
	r := &apiRequest{jsa: via.js.Load().account(globalAccountName), reply: "_INBOX.x", subject: "STREAM.CREATE.P"}
	if h := r.newMetaHold("STREAM.CREATE.", raftID(ml.Name())); h != nil {
		t.Errorf("a create held (its copy would be applied twice by the older peer)")
	}
}

// A server that applies a create late (after the new stream's leader
// announced itself) forgot that announcement at the apply (it forgot any
// entry of the name, meant for a deleted stream's resignation): right
// after the apply it knew no leader for the new stream until the leader's
// next list or announcement (80-710 ms later). Only a resignation is
// forgotten now.
func TestJetStreamClusterLateCreateKeepsNewLeader(t *testing.T) {
	var late atomic.Pointer[Server]
	var knownBefore sync.Map // stream -> leader known just before the late apply
	testHookMetaApply = func(s *Server, me *metaEntry) {
		if s == late.Load() && me.Op == "add" {
			time.Sleep(300 * time.Millisecond) // a slow apply
			knownBefore.Store(me.SA.Config.Name, s.js.Load().cluster.streamLeader(me.SA.Account, me.SA.Config.Name))
		}
	}
	t.Cleanup(func() { testHookMetaApply = nil })
	c := runTaggedJSCluster(t)
	ml := c.metaLeaderIndex()
	on := (ml + 1) % len(c.servers)
	lateS := c.servers[(ml+2)%len(c.servers)]
	late.Store(lateS)
	_, js := jsClient(t, c.servers[ml])
	for i := 0; i < 3; i++ {
		name := fmt.Sprint("LATE", i)
		createStream(t, js, jetstream.StreamConfig{Name: name, Subjects: []string{name}, Replicas: 1,
			Placement: &jetstream.Placement{Tags: []string{fmt.Sprintf("node:%d", on)}}})
		ljc := lateS.js.Load().cluster
		var after string
		waitFor(t, 5*time.Second, "late server applied the create", func() bool {
			if ljc.assignment(globalAccountName, name) == nil {
				return false
			}
			after = ljc.streamLeader(globalAccountName, name) // forget ran with the assignment's insertion
			return true
		})
		b, _ := knownBefore.Load(name)
		before, _ := b.(string)
		if before != "" && after == "" {
			t.Errorf("%s: the late server knew leader %q before its apply of the create, none right after", name, before)
		}
	}
}
