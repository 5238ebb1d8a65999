package server

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Stream creates, updates and deletes sent through a survivor right after
// the meta leader's server shut down (the survivors still believe in it)
// are answered within the client's timeout, by the new leader, and
// applied once. They used to go unanswered: the client timed out after
// its 5 s (10 s in nats.go's JetStream calls).

// heldWrite sends subject with body through via right after ml shut down
// and returns the one answer, which must come within 4.5 s.
func heldWriteAnswer(t *testing.T, c *jsTestCluster, ml *Server, nc *nats.Conn, subject string, body []byte) *nats.Msg {
	t.Helper()
	inbox := nats.NewInbox()
	answers, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	ml.Shutdown()
	start := time.Now()
	if err := nc.PublishRequest(subject, inbox, body); err != nil {
		t.Fatal(err)
	}
	m, err := answers.NextMsg(4500 * time.Millisecond)
	if err != nil {
		t.Fatalf("no answer %v after the meta leader's shutdown: %v", time.Since(start).Round(time.Millisecond), err)
	}
	t.Logf("answered %v after the meta leader's shutdown", time.Since(start).Round(time.Millisecond))
	if m2, err := answers.NextMsg(2 * metaResendEvery); err == nil {
		t.Fatalf("a second answer: %s", m2.Data)
	}
	if nl := c.waitMetaLeader(); nl == ml {
		t.Fatal("the server shut down still leads")
	}
	return m
}

// heldWriteSetup is a cluster, its meta leader, and a client of another
// server that created stream A (which keeps the meta group awake: a quiet
// follower forgets a dead leader at once and answers 10008 instead).
func heldWriteSetup(t *testing.T) (*jsTestCluster, *Server, *nats.Conn, jetstream.JetStream) {
	c := runJSCluster(t, 3)
	ml := c.waitMetaLeader()
	nc, js := jsClient(t, c.notMetaLeader(ml))
	createStream(t, js, jetstream.StreamConfig{Name: "A", Subjects: []string{"a"}, Replicas: 3})
	return c, ml, nc, js
}

// survivorsAgree waits until every running server's assignment of name
// satisfies ok.
func survivorsAgree(t *testing.T, c *jsTestCluster, name, what string, ok func(*streamAssignment) bool) {
	t.Helper()
	waitFor(t, 5*time.Second, what, func() bool {
		for _, s := range c.servers {
			if s.Running() && !ok(s.js.Load().cluster.assignment(globalAccountName, name)) {
				return false
			}
		}
		return true
	})
}

func TestJetStreamClusterMetaHoldCreate(t *testing.T) {
	c, ml, nc, js := heldWriteSetup(t)
	cfg := jetstream.StreamConfig{Name: "X", Subjects: []string{"x"}, Replicas: 3}
	m := heldWriteAnswer(t, c, ml, nc, "$JS.API.STREAM.CREATE.X", mustJSON(t, cfg))
	var resp streamAnswerLite
	if err := json.Unmarshal(m.Data, &resp); err != nil || resp.Error != nil || resp.Config.Name != "X" ||
		resp.Type != apiTypePrefix+"stream_create_response" {
		t.Fatalf("create answer: %s", m.Data)
	}
	survivorsAgree(t, c, "X", "X on every survivor", func(sa *streamAssignment) bool { return sa != nil })
	names := map[string]int{}
	for n := range js.StreamNames(ctx(t)).Name() {
		names[n]++
	}
	if names["X"] != 1 || len(names) != 2 {
		t.Fatalf("stream names: %v", names)
	}
}

func TestJetStreamClusterMetaHoldUpdate(t *testing.T) {
	c, ml, nc, js := heldWriteSetup(t)
	cfg := jetstream.StreamConfig{Name: "U", Subjects: []string{"u"}, Replicas: 3}
	createStream(t, js, cfg)
	cfg.Description = "held"
	m := heldWriteAnswer(t, c, ml, nc, "$JS.API.STREAM.UPDATE.U", mustJSON(t, cfg))
	var resp streamAnswerLite
	if err := json.Unmarshal(m.Data, &resp); err != nil || resp.Error != nil || resp.Config.Description != "held" ||
		resp.Type != apiTypePrefix+"stream_update_response" {
		t.Fatalf("update answer: %s", m.Data)
	}
	survivorsAgree(t, c, "U", "the update on every survivor", func(sa *streamAssignment) bool {
		return sa != nil && sa.Config.Description == "held"
	})
}

func TestJetStreamClusterMetaHoldDelete(t *testing.T) {
	c, ml, nc, js := heldWriteSetup(t)
	createStream(t, js, jetstream.StreamConfig{Name: "D", Subjects: []string{"d"}, Replicas: 3})
	m := heldWriteAnswer(t, c, ml, nc, "$JS.API.STREAM.DELETE.D", nil)
	var resp successResponse
	if err := json.Unmarshal(m.Data, &resp); err != nil || resp.Error != nil || !resp.Success {
		t.Fatalf("delete answer: %s", m.Data)
	}
	survivorsAgree(t, c, "D", "D gone from every survivor", func(sa *streamAssignment) bool { return sa == nil })
}

// streamAnswerLite is the part of a create or update answer
// the tests read.
type streamAnswerLite struct {
	Type   string    `json:"type"`
	Error  *ApiError `json:"error"`
	Config struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"config"`
}

// A client that reuses one reply subject creates a stream, deletes it and
// sends the same create again as the meta leader dies. The second
// create's id repeats the first's, so a copy of it would find the first
// one's record at the new leader and be answered "created" with nothing
// applied (found by review). Its server does not hold a write that
// repeats a recent one: no answer (as nats-server), or a true one.
func TestJetStreamClusterMetaHoldSkipsRepeatedWrite(t *testing.T) {
	c, ml, nc, js := heldWriteSetup(t)
	const reply = "fixed.reply"
	answers, err := nc.SubscribeSync(reply)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	body := mustJSON(t, jetstream.StreamConfig{Name: "FX", Subjects: []string{"fx"}, Replicas: 3})
	if err := nc.PublishRequest("$JS.API.STREAM.CREATE.FX", reply, body); err != nil {
		t.Fatal(err)
	}
	if m, err := answers.NextMsg(5 * time.Second); err != nil || strings.Contains(string(m.Data), `"error"`) {
		t.Fatalf("first create: %v", err)
	}
	if err := js.DeleteStream(ctx(t), "FX"); err != nil {
		t.Fatal(err)
	}
	ml.Shutdown()
	if err := nc.PublishRequest("$JS.API.STREAM.CREATE.FX", reply, body); err != nil {
		t.Fatal(err)
	}
	m, err := answers.NextMsg(4500 * time.Millisecond)
	if err != nil {
		return // not held: the client times out, as with nats-server
	}
	var resp streamAnswerLite
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Error != nil {
		return
	}
	c.waitMetaLeader()
	if _, err := js.Stream(ctx(t), "FX"); err != nil {
		t.Fatalf("the repeated create answered success, but FX does not exist: %v", err)
	}
}
