package server

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A stream listing sent through a survivor right after the meta leader's
// server shut down, while the survivors (their meta group awake) still
// believe in it, is answered once, by the new leader, within the client's
// timeout. It used to go unanswered until the client's 5 s ran out,
// although a new leader was ready in under a second.
func TestJetStreamClusterMetaListingHeldOverLeaderDeath(t *testing.T) {
	c := runJSCluster(t, 3)
	ml := c.waitMetaLeader()
	via := c.notMetaLeader(ml)
	nc, js := jsClient(t, via)
	// A create just before keeps the meta group awake: a quiet follower
	// forgets a dead leader at once and answers 10008 instead.
	createStream(t, js, jetstream.StreamConfig{Name: "A", Subjects: []string{"a"}, Replicas: 3})
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
	if err := nc.PublishRequest("$JS.API.STREAM.NAMES", inbox, nil); err != nil {
		t.Fatal(err)
	}
	m, err := answers.NextMsg(4500 * time.Millisecond)
	if err != nil {
		t.Fatalf("no answer %v after the meta leader's shutdown: %v", time.Since(start).Round(time.Millisecond), err)
	}
	t.Logf("answered %v after the meta leader's shutdown", time.Since(start).Round(time.Millisecond))
	if !strings.Contains(string(m.Data), "stream_names_response") || !strings.Contains(string(m.Data), `"A"`) ||
		strings.Contains(string(m.Data), `"error"`) {
		t.Fatalf("names: %s", m.Data)
	}
	if m, err := answers.NextMsg(2 * metaResendEvery); err == nil {
		t.Fatalf("a second answer: %s", m.Data)
	}
	if nl := c.waitMetaLeader(); nl == ml {
		t.Fatal("the server shut down still leads")
	}
}

// The review's finding: a create whose original the old meta leader
// applied (its answer passed nowhere: nobody listened on the reply
// subject) is held, and its copy sent to the next leader after that
// leader's death, but never applied again: its request id is in the meta
// state's table. Re-sent without one, it re-created the stream deleted in
// between.
func TestJetStreamClusterMetaHoldNeverReappliesCreate(t *testing.T) {
	c := runJSCluster(t, 3)
	ml := c.waitMetaLeader()
	via := c.notMetaLeader(ml)
	nc, js := jsClient(t, via)
	// keeps the meta group awake, as in the listing test above
	createStream(t, js, jetstream.StreamConfig{Name: "A", Subjects: []string{"a"}, Replicas: 3})
	req := mustJSON(t, jetstream.StreamConfig{Name: "X", Subjects: []string{"x"}, Replicas: 3})
	if err := nc.PublishRequest("$JS.API.STREAM.CREATE.X", nats.NewInbox(), req); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	exists := func(s *Server) bool {
		return s.js.Load().cluster.assignment(globalAccountName, "X") != nil
	}
	waitFor(t, 3*time.Second, "X created", func() bool { return exists(via) })
	if err := js.DeleteStream(ctx(t), "X"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "X deleted", func() bool { return !exists(via) })
	ml.Shutdown()
	c.waitMetaLeader()
	neverWithin(t, metaHoldFor+time.Second, "the deleted stream X created again", func() bool { return exists(via) })
}

// The same for an update: re-sent without its request id, it undid a
// later update another client was told succeeded.
func TestJetStreamClusterMetaHoldNeverReappliesUpdate(t *testing.T) {
	c := runJSCluster(t, 3)
	ml := c.waitMetaLeader()
	via := c.notMetaLeader(ml)
	nc, js := jsClient(t, via)
	cfg := jetstream.StreamConfig{Name: "U", Subjects: []string{"u"}, Replicas: 3}
	createStream(t, js, cfg)
	cfg.Description = "first"
	if err := nc.PublishRequest("$JS.API.STREAM.UPDATE.U", nats.NewInbox(), mustJSON(t, cfg)); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	desc := func() string {
		if sa := via.js.Load().cluster.assignment(globalAccountName, "U"); sa != nil {
			return sa.Config.Description
		}
		return ""
	}
	waitFor(t, 3*time.Second, "the first update applied", func() bool { return desc() == "first" })
	cfg.Description = "second"
	if _, err := js.UpdateStream(ctx(t), cfg); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "the second update applied", func() bool { return desc() == "second" })
	ml.Shutdown()
	c.waitMetaLeader()
	neverWithin(t, metaHoldFor+time.Second, "the acknowledged second update undone", func() bool { return desc() != "second" })
}

// neverWithin fails if bad holds at any poll during d: a condition that
// must stay false for a whole window (no sleep stands in for a wait).
func neverWithin(t *testing.T, d time.Duration, what string, bad func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if bad() {
			t.Fatal(what)
		}
	}
}

// A delete whose original the old leader applied (its answer passed
// nowhere) is held and sent again after that leader's death; the copy
// finds no stream, and is answered with the first outcome (success), not
// with "stream not found" from the call's own check.
func TestJetStreamClusterMetaHoldAppliedDeleteAnswersFirstOutcome(t *testing.T) {
	c := runJSCluster(t, 3)
	ml := c.waitMetaLeader()
	via := c.notMetaLeader(ml)
	nc, js := jsClient(t, via)
	createStream(t, js, jetstream.StreamConfig{Name: "D", Subjects: []string{"d"}, Replicas: 3})
	// The copy's answer goes to the holding server's inbox in the account.
	copies, err := nc.SubscribeSync("$JSH.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.PublishRequest("$JS.API.STREAM.DELETE.D", nats.NewInbox(), nil); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "D deleted", func() bool {
		return via.js.Load().cluster.assignment(globalAccountName, "D") == nil
	})
	ml.Shutdown()
	m, err := copies.NextMsg(4500 * time.Millisecond)
	if err != nil {
		t.Fatalf("the delete's copy unanswered: %v", err)
	}
	if !strings.Contains(string(m.Data), `"success":true`) || strings.Contains(string(m.Data), `"error"`) {
		t.Fatalf("the delete's copy answered %s", m.Data)
	}
}
