package server

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestConsumerPriorityGroups(t *testing.T) {
	s := runJSServer(t)
	priorityScenario(t, connectNATS(t, s.ClientURL()), 1)
}

// TestConsumerPriorityGroupsRef runs the same scenario against nats-server.
func TestConsumerPriorityGroupsRef(t *testing.T) {
	bin := os.Getenv("TERN_REF_NATS_SERVER")
	if bin == "" {
		t.Skip("set TERN_REF_NATS_SERVER to a nats-server v2.15.2 binary")
	}
	priorityScenario(t, ccStartRef(t, bin, ""), 1)
}

// pullOne sends one pull request and describes its first answer:
// "msg <data> pin=<Nats-Pin-Id>" or "<status> <description>".
func pullOne(t *testing.T, nc *nats.Conn, cons, body string) string {
	t.Helper()
	m, err := nc.Request("$JS.API.CONSUMER.MSG.NEXT.S."+cons, []byte(body), 3*time.Second)
	if err != nil {
		t.Fatalf("pull %s %s: %v", cons, body, err)
	}
	if st := m.Header.Get("Status"); st != "" {
		return st + " " + m.Header.Get("Description")
	}
	return fmt.Sprintf("msg %s pin=%v", m.Data, m.Header.Get(JSPullRequestNatsPinId) != "")
}

func priorityScenario(t *testing.T, nc *nats.Conn, replicas int) {
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	consumerStreamR(t, js, jetstream.MemoryStorage, 6, replicas)
	create := func(cfg jetstream.ConsumerConfig) {
		t.Helper()
		cfg.AckPolicy = jetstream.AckExplicitPolicy
		if _, err := js.CreateOrUpdateConsumer(ctx(t), "S", cfg); err != nil {
			t.Fatal(err)
		}
		if replicas > 1 { // nats-server's consumer has a raft group of its own, whose leader answers pulls
			waitFor(t, 10*time.Second, "the consumer's leader", func() bool {
				c, err := js.Consumer(ctx(t), "S", cfg.Durable)
				return err == nil && c.CachedInfo().Cluster != nil && c.CachedInfo().Cluster.Leader != ""
			})
		}
	}
	expect := func(got, want string) {
		t.Helper()
		if got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	// Requests' priority fields checked against the consumer's policy.
	create(jetstream.ConsumerConfig{Durable: "N"})
	expect(pullOne(t, nc, "N", `{"batch":1,"min_pending":1}`), "400 Bad Request - Not a Overflow Priority consumer")
	expect(pullOne(t, nc, "N", `{"batch":1,"id":"x"}`), "400 Bad Request - Not a Pinned Client Priority consumer")
	expect(pullOne(t, nc, "N", `{"batch":1,"priority":10}`), "400 Bad Request - Priority must be between 0 and 9")
	create(jetstream.ConsumerConfig{Durable: "O", PriorityPolicy: jetstream.PriorityPolicyOverflow, PriorityGroups: []string{"A"}})
	expect(pullOne(t, nc, "O", `{"batch":1}`), "400 Bad Request - Priority Group missing")
	expect(pullOne(t, nc, "O", `{"batch":1,"group":"B"}`), "400 Bad Request - Invalid Priority Group")

	// Overflow: served only past the thresholds.
	expect(pullOne(t, nc, "O", `{"batch":1,"group":"A","min_pending":7,"expires":300000000}`), "408 Request Timeout")
	expect(pullOne(t, nc, "O", `{"batch":1,"group":"A","min_pending":6}`), "msg m1 pin=false")
	expect(pullOne(t, nc, "O", `{"batch":1,"group":"A","min_ack_pending":2,"expires":300000000}`), "408 Request Timeout")
	expect(pullOne(t, nc, "O", `{"batch":1,"group":"A","min_ack_pending":1}`), "msg m2 pin=false")

	// Pinned client.
	adv, err := nc.SubscribeSync("$JS.EVENT.ADVISORY.CONSUMER.*.S.*")
	if err != nil {
		t.Fatal(err)
	}
	create(jetstream.ConsumerConfig{Durable: "P", PriorityPolicy: jetstream.PriorityPolicyPinned, PriorityGroups: []string{"A"}, PinnedTTL: time.Minute})
	m, err := nc.Request("$JS.API.CONSUMER.MSG.NEXT.S.P", []byte(`{"batch":1,"group":"A"}`), 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	pin := m.Header.Get(JSPullRequestNatsPinId)
	if pin == "" || string(m.Data) != "m1" {
		t.Fatalf("first pinned delivery %q pin %q", m.Data, pin)
	}
	advisory := func(kind string) map[string]any {
		t.Helper()
		am, err := adv.NextMsg(3 * time.Second)
		for err == nil && !strings.Contains(am.Subject, "PINNED") {
			am, err = adv.NextMsg(3 * time.Second) // created
		}
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal(am.Data, &v); err != nil || !strings.HasSuffix(v["type"].(string), kind) || v["group"] != "A" {
			t.Fatalf("advisory %s, want %s", am.Data, kind)
		}
		return v
	}
	if v := advisory("consumer_group_pinned"); v["pinned_id"] != pin {
		t.Fatalf("pinned advisory %v, pin %s", v, pin)
	}
	c, err := js.Consumer(ctx(t), "S", "P")
	if err != nil {
		t.Fatal(err)
	}
	if pg := c.CachedInfo().PriorityGroups; len(pg) != 1 || pg[0].PinnedClientID != pin || pg[0].PinnedTS.IsZero() {
		t.Fatalf("info priority groups %+v", pg)
	}
	expect(pullOne(t, nc, "P", `{"batch":1,"group":"A","id":"bogus"}`), "423 Nats-Pin-Id mismatch")
	expect(pullOne(t, nc, "P", `{"batch":1,"group":"A","expires":300000000}`), "408 Request Timeout")
	expect(pullOne(t, nc, "P", `{"batch":1,"group":"A","id":"`+pin+`"}`), "msg m2 pin=true")

	// Unpinned by the API: the next request without an id gets a new pin.
	var ur JSApiConsumerUnpinResponse
	um, err := nc.Request("$JS.API.CONSUMER.UNPIN.S.P", []byte(`{"group":"A"}`), 3*time.Second)
	if err != nil || json.Unmarshal(um.Data, &ur) != nil || ur.Error != nil {
		t.Fatalf("unpin: %v %s", err, um.Data)
	}
	if v := advisory("consumer_group_unpinned"); v["reason"] != "admin" {
		t.Fatalf("unpinned advisory %v", v)
	}
	m, err = nc.Request("$JS.API.CONSUMER.MSG.NEXT.S.P", []byte(`{"batch":1,"group":"A"}`), 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if p2 := m.Header.Get(JSPullRequestNatsPinId); p2 == "" || p2 == pin || string(m.Data) != "m3" {
		t.Fatalf("after unpin: %q pin %q (old %q)", m.Data, p2, pin)
	}
	advisory("consumer_group_pinned")
	expect(pullOne(t, nc, "P", `{"batch":1,"group":"A","id":"`+pin+`"}`), "423 Nats-Pin-Id mismatch")

	// The pin ends after priority_timeout without a request from it.
	create(jetstream.ConsumerConfig{Durable: "Q", PriorityPolicy: jetstream.PriorityPolicyPinned, PriorityGroups: []string{"A"}, PinnedTTL: 400 * time.Millisecond})
	expect(pullOne(t, nc, "Q", `{"batch":1,"group":"A"}`), "msg m1 pin=true")
	advisory("consumer_group_pinned")
	if v := advisory("consumer_group_unpinned"); v["reason"] != "timeout" || v["consumer"] != "Q" {
		t.Fatalf("unpinned advisory %v", v)
	}
	expect(pullOne(t, nc, "Q", `{"batch":1,"group":"A"}`), "msg m2 pin=true")
	advisory("consumer_group_pinned")

	// CONSUMER.UNPIN errors.
	for body, want := range map[string]uint16{`{"group":"B"}`: 10160, `{"group":"a.b"}`: 10162, `{}`: 10025, `x`: 10025} {
		var r JSApiConsumerUnpinResponse
		um, err := nc.Request("$JS.API.CONSUMER.UNPIN.S.P", []byte(body), 3*time.Second)
		if err != nil || json.Unmarshal(um.Data, &r) != nil || r.Error == nil || r.Error.ErrCode != want {
			t.Fatalf("unpin %s: %v %s, want %d", body, err, um.Data, want)
		}
	}

	// Prioritized: a waiting request of priority 1 is served before one of 5.
	create(jetstream.ConsumerConfig{Durable: "Z", PriorityPolicy: jetstream.PriorityPolicyPrioritized, PriorityGroups: []string{"A"},
		DeliverPolicy: jetstream.DeliverNewPolicy})
	low, _ := nc.SubscribeSync(nats.NewInbox())
	high, _ := nc.SubscribeSync(nats.NewInbox())
	nc.PublishRequest("$JS.API.CONSUMER.MSG.NEXT.S.Z", low.Subject, []byte(`{"batch":1,"group":"A","priority":5,"expires":2000000000}`))
	nc.PublishRequest("$JS.API.CONSUMER.MSG.NEXT.S.Z", high.Subject, []byte(`{"batch":1,"group":"A","priority":1,"expires":2000000000}`))
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "two waiting requests", func() bool {
		ci, err := js.Consumer(ctx(t), "S", "Z")
		return err == nil && ci.CachedInfo().NumWaiting == 2
	})
	if _, err := js.Publish(ctx(t), "s.7", []byte("m7")); err != nil {
		t.Fatal(err)
	}
	if hm, err := high.NextMsg(3 * time.Second); err != nil || string(hm.Data) != "m7" {
		t.Fatalf("priority 1 request: %v %v", hm, err)
	}
	if lm, err := low.NextMsg(3 * time.Second); err != nil || lm.Header.Get("Status") != "408" {
		t.Fatalf("priority 5 request should time out empty: %v %v", lm, err)
	}
}

// A pin recovered with a durable consumer's state still times out.
func TestConsumerPinRecoveredTimesOut(t *testing.T) {
	o := testOptions()
	o.JetStream = true
	o.StoreDir = t.TempDir()
	s := runServer(t, o)
	nc, js := jsClient(t, s)
	consumerStream(t, js, jetstream.FileStorage, 3)
	if _, err := js.CreateOrUpdateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "P", AckPolicy: jetstream.AckExplicitPolicy,
		PriorityPolicy: jetstream.PriorityPolicyPinned, PriorityGroups: []string{"A"}, PinnedTTL: 500 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if got := pullOne(t, nc, "P", `{"batch":1,"group":"A"}`); got != "msg m1 pin=true" {
		t.Fatal(got)
	}
	nc.Close()
	s.Shutdown()
	s.WaitForShutdown()
	s = runServer(t, o)
	nc = connectNATS(t, s.ClientURL())
	if got := pullOne(t, nc, "P", `{"batch":1,"group":"A","expires":2500000000}`); got != "msg m2 pin=true" {
		t.Fatalf("after restart the old pin should time out and a new one be given: %s", got)
	}
}
