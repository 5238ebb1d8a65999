package server

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The one-server pause and priority scenarios, on an R3 stream of a
// 3-server cluster (the client on a server that may not lead it).
func TestJetStreamClusterConsumerPauseScenario(t *testing.T) {
	c := runJSCluster(t, 3)
	pauseScenario(t, connectNATS(t, c.servers[1].ClientURL()), 3)
	checkConsumersAgree(t, c, "S")
}

func TestJetStreamClusterConsumerPriorityScenario(t *testing.T) {
	c := runJSCluster(t, 3)
	priorityScenario(t, connectNATS(t, c.servers[2].ClientURL()), 3)
	checkConsumersAgree(t, c, "S")
}

// The same scenarios against a 3-server nats-server cluster.
func TestJetStreamClusterConsumerPauseScenarioRef(t *testing.T) {
	pauseScenario(t, refCluster(t), 3)
}

func TestJetStreamClusterConsumerPriorityScenarioRef(t *testing.T) {
	priorityScenario(t, refCluster(t), 3)
}

// refCluster runs a 3-server cluster of the reference nats-server
// (TERN_REF_NATS_SERVER) and connects to its first server, once a meta
// leader answers.
func refCluster(t *testing.T) *nats.Conn {
	bin := os.Getenv("TERN_REF_NATS_SERVER")
	if bin == "" {
		t.Skip("set TERN_REF_NATS_SERVER to a nats-server v2.15.2 binary")
	}
	dir := t.TempDir()
	var ports, cports [3]int
	var routes []string
	for i := range ports {
		ports[i], cports[i] = freePort(t), freePort(t)
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", cports[i]))
	}
	for i := range ports {
		conf := filepath.Join(dir, fmt.Sprintf("r%d.conf", i))
		text := fmt.Sprintf("server_name: R%d\nlisten: 127.0.0.1:%d\njetstream { store_dir: %q }\ncluster { name: REF\nlisten: 127.0.0.1:%d\nroutes: [%s] }\n",
			i+1, ports[i], filepath.Join(dir, fmt.Sprintf("js%d", i)), cports[i], strings.Join(routes, ", "))
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		startProcessBinary(t, bin, ports[i], "-c", conf)
	}
	nc := connectNATS(t, fmt.Sprintf("nats://127.0.0.1:%d", ports[0]))
	waitFor(t, 20*time.Second, "the reference cluster's meta leader", func() bool {
		m, err := nc.Request("$JS.API.INFO", nil, time.Second)
		return err == nil && !strings.Contains(string(m.Data), `"error"`)
	})
	return nc
}

// advisoryWatch collects a subject's advisories in order.
type advisoryWatch struct {
	t   *testing.T
	sub *nats.Subscription
}

func watchAdvisories(t *testing.T, nc *nats.Conn, subject string) *advisoryWatch {
	sub, err := nc.SubscribeSync(subject)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return &advisoryWatch{t: t, sub: sub}
}

// next is the next advisory, decoded.
func (w *advisoryWatch) next() map[string]any {
	w.t.Helper()
	m, err := w.sub.NextMsg(5 * time.Second)
	if err != nil {
		w.t.Fatalf("advisory on %s: %v", w.sub.Subject, err)
	}
	var v map[string]any
	if err := json.Unmarshal(m.Data, &v); err != nil {
		w.t.Fatal(err)
	}
	v["subject"] = m.Subject
	return v
}

// replicaConsumers waits until ok holds for the consumer name on every
// replica of stream (they apply the log each at its own pace); what ok
// returns is the last replica's mismatch ("" when it holds).
func replicaConsumers(t *testing.T, c *jsTestCluster, stream, name string, ok func(o *consumer) string) {
	t.Helper()
	var why string
	waitFor(t, 10*time.Second, "every replica's consumer "+name, func() bool {
		reps := c.replicas(stream)
		if len(reps) != 3 {
			why = fmt.Sprintf("%d replicas", len(reps))
			return false
		}
		for _, m := range reps {
			m.mu.Lock()
			o := m.consumers[name]
			why = "no consumer"
			if o != nil {
				why = ok(o)
			}
			m.mu.Unlock()
			if why != "" {
				why = m.jsa.js.srv.Name() + ": " + why
				return false
			}
		}
		return true
	})
	if why != "" {
		t.Fatal(why)
	}
}

// stepdownCC moves the leadership of stream CC away from leader and waits
// for another server to lead it.
func stepdownCC(t *testing.T, c *jsTestCluster, nc *nats.Conn, leader string) string {
	t.Helper()
	var now string
	waitFor(t, 20*time.Second, "a new leader of CC", func() bool {
		if now == "" || now == leader {
			nc.Request("$JS.API.STREAM.LEADER.STEPDOWN.CC", nil, time.Second)
		}
		now = ""
		for _, m := range c.replicas("CC") {
			if m.isLeader() {
				now = m.jsa.js.srv.Name()
			}
		}
		return now != "" && now != leader
	})
	return now
}

// TestJetStreamClusterConsumerPauseAcrossStepdown: CONSUMER.PAUSE of an
// R3 consumer is applied on every replica (config and state alike, so
// INFO from the next leader says the same), its advisory is told once (by
// the leader), the next leader ends the pause when it passes, with one
// advisory, and a resume by the API is an entry too.
func TestJetStreamClusterConsumerPauseAcrossStepdown(t *testing.T) {
	c, nc, js, leader := ccSetup(t, 3)
	cons, err := js.CreateOrUpdateConsumer(ctx(t), "CC", jetstream.ConsumerConfig{Durable: "P", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	adv := watchAdvisories(t, nc, JSAdvisoryConsumerPausePre+".CC.P")
	until := time.Now().Add(3 * time.Second).UTC().Truncate(time.Millisecond)
	pr, err := js.PauseConsumer(ctx(t), "CC", "P", until)
	if err != nil || !pr.Paused || !pr.PauseUntil.Equal(until) {
		t.Fatalf("pause: %+v %v", pr, err)
	}
	replicaConsumers(t, c, "CC", "P", func(o *consumer) string {
		if p := o.cfg.PauseUntil; p == nil || !p.Equal(until) || o.state.PausedUntil() != until.UnixNano() {
			return fmt.Sprintf("config pause_until %v, state %d", p, o.state.PausedUntil())
		}
		return ""
	})
	if a := adv.next(); a["paused"] != true {
		t.Fatalf("pause advisory %v", a)
	}
	stepdownCC(t, c, nc, leader)
	ci := ccInfo(t, js, "P")
	if !ci.Paused || ci.PauseRemaining <= 0 || ci.Config.PauseUntil == nil || !ci.Config.PauseUntil.Equal(until) {
		t.Fatalf("info from the new leader: paused %v remaining %v until %v", ci.Paused, ci.PauseRemaining, ci.Config.PauseUntil)
	}
	// Nothing is delivered while paused; the new leader ends the pause.
	n := 0
	for n < 3 && time.Now().Before(until.Add(10*time.Second)) {
		msgs, err := cons.Fetch(3-n, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for m := range msgs.Messages() {
			if time.Now().Before(until) {
				t.Fatalf("delivered %s while paused", m.Subject())
			}
			n++
			if err := m.DoubleAck(ctx(t)); err != nil {
				t.Fatal(err)
			}
		}
		// A request the old leader still took gets 409 Leadership Change: pull again.
	}
	if n != 3 {
		t.Fatalf("fetched %d after the pause, want 3", n)
	}
	// The end of the pause, told once: the next advisory is the pause below.
	if a := adv.next(); a["paused"] != false || a["pause_until"] != until.Format(time.RFC3339Nano) {
		t.Fatalf("end-of-pause advisory %v", a)
	}
	far := time.Now().Add(time.Hour).UTC()
	if _, err := js.PauseConsumer(ctx(t), "CC", "P", far); err != nil {
		t.Fatal(err)
	}
	if a := adv.next(); a["paused"] != true {
		t.Fatalf("second pause advisory %v", a)
	}
	rr, err := js.ResumeConsumer(ctx(t), "CC", "P")
	if err != nil || rr.Paused {
		t.Fatalf("resume: %+v %v", rr, err)
	}
	if a := adv.next(); a["paused"] != false {
		t.Fatalf("resume advisory %v", a)
	}
	replicaConsumers(t, c, "CC", "P", func(o *consumer) string {
		if o.cfg.PauseUntil != nil || o.state.PausedUntil() != 0 {
			return fmt.Sprintf("still paused after the resume: %v %d", o.cfg.PauseUntil, o.state.PausedUntil())
		}
		return ""
	})
	if _, err := js.PauseConsumer(ctx(t), "CC", "NOPE", far); apiCode(err) != 10014 {
		t.Fatalf("pause of a missing consumer: %v", err)
	}
	checkConsumersAgree(t, c, "CC")
}

// TestJetStreamClusterConsumerPinAcrossStepdown: the pin is state on
// every replica; a new leader starts without one, as nats-server's (its
// pin lives in the consumer leader's memory): the old id gets 423
// Nats-Wrong-Pin-Id, a request without one gets a new pin and the new
// leader alone tells PINNED. UNPIN is an entry, told once.
func TestJetStreamClusterConsumerPinAcrossStepdown(t *testing.T) {
	c, nc, js, leader := ccSetup(t, 6)
	if _, err := js.CreateOrUpdateConsumer(ctx(t), "CC", jetstream.ConsumerConfig{Durable: "PIN", AckPolicy: jetstream.AckExplicitPolicy,
		PriorityPolicy: jetstream.PriorityPolicyPinned, PriorityGroups: []string{"A"}, PinnedTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	adv := watchAdvisories(t, nc, "$JS.EVENT.ADVISORY.CONSUMER.*.CC.PIN")
	pull := func(body string) *nats.Msg {
		t.Helper()
		var m *nats.Msg
		waitFor(t, 15*time.Second, "an answer from the leader", func() bool {
			var err error
			m, err = nc.Request("$JS.API.CONSUMER.MSG.NEXT.CC.PIN", []byte(body), 3*time.Second)
			return err == nil && m.Header.Get("Status") != "409" && m.Header.Get("Status") != "503"
		})
		return m
	}
	m := pull(`{"batch":1,"group":"A"}`)
	pin := m.Header.Get(JSPullRequestNatsPinId)
	if pin == "" {
		t.Fatalf("no pin on %q %v", m.Data, m.Header)
	}
	if a := adv.next(); !strings.HasSuffix(a["subject"].(string), "PINNED.CC.PIN") || strings.Contains(a["subject"].(string), "UNPINNED") || a["pinned_id"] != pin {
		t.Fatalf("pinned advisory %v, pin %s", a, pin)
	}
	replicaConsumers(t, c, "CC", "PIN", func(o *consumer) string {
		if p, ts := o.state.Pinned(); p != pin || ts == 0 {
			return fmt.Sprintf("pinned %q at %d, want %q", p, ts, pin)
		}
		return ""
	})
	if st := pull(`{"batch":1,"group":"A","id":"bogus"}`); st.Header.Get("Status") != "423" || st.Header.Get("Description") != "Nats-Pin-Id mismatch" {
		t.Fatalf("wrong id: %v", st.Header)
	}
	if m := pull(`{"batch":1,"group":"A","id":"` + pin + `"}`); m.Header.Get(JSPullRequestNatsPinId) != pin {
		t.Fatalf("pinned request: %v", m.Header)
	}
	checkConsumersAgree(t, c, "CC")

	stepdownCC(t, c, nc, leader)
	replicaConsumers(t, c, "CC", "PIN", func(o *consumer) string {
		if p, _ := o.state.Pinned(); p != "" {
			return "still pinned after the leader change: " + p
		}
		return ""
	})
	if st := pull(`{"batch":1,"group":"A","id":"` + pin + `"}`); st.Header.Get("Status") != "423" || st.Header.Get("Description") != "Nats-Wrong-Pin-Id" {
		t.Fatalf("old pin after the leader change: %v", st.Header)
	}
	m = pull(`{"batch":1,"group":"A"}`)
	pin2 := m.Header.Get(JSPullRequestNatsPinId)
	if pin2 == "" || pin2 == pin {
		t.Fatalf("new pin %q (old %q)", pin2, pin)
	}
	// The next advisory is the new pin: the leader change told nothing.
	if a := adv.next(); strings.Contains(a["subject"].(string), "UNPINNED") || a["pinned_id"] != pin2 {
		t.Fatalf("advisory after the leader change %v", a)
	}
	ci := ccInfo(t, js, "PIN")
	if len(ci.PriorityGroups) != 1 || ci.PriorityGroups[0].PinnedClientID != pin2 {
		t.Fatalf("info priority groups %+v", ci.PriorityGroups)
	}
	um, err := nc.Request("$JS.API.CONSUMER.UNPIN.CC.PIN", []byte(`{"group":"A"}`), 5*time.Second)
	if err != nil || string(um.Data) != `{"type":"io.nats.jetstream.api.v1.consumer_unpin_response"}` {
		t.Fatalf("unpin: %v %s", err, um.Data)
	}
	if a := adv.next(); !strings.Contains(a["subject"].(string), "UNPINNED") || a["reason"] != "admin" || a["group"] != "A" {
		t.Fatalf("unpinned advisory %v", a)
	}
	replicaConsumers(t, c, "CC", "PIN", func(o *consumer) string {
		if p, _ := o.state.Pinned(); p != "" {
			return "still pinned after UNPIN: " + p
		}
		return ""
	})
	m = pull(`{"batch":1,"group":"A"}`)
	if p3 := m.Header.Get(JSPullRequestNatsPinId); p3 == "" || p3 == pin2 {
		t.Fatalf("pin after UNPIN %q", p3)
	}
	if a := adv.next(); strings.Contains(a["subject"].(string), "UNPINNED") {
		t.Fatalf("unpin told twice: %v", a)
	}
	checkConsumersAgree(t, c, "CC")
}
