package server

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestConsumerPauseResume(t *testing.T) {
	s := runJSServer(t)
	pauseScenario(t, connectNATS(t, s.ClientURL()), 1)
}

// TestConsumerPauseResumeRef runs the same scenario against nats-server.
func TestConsumerPauseResumeRef(t *testing.T) {
	bin := os.Getenv("TERN_REF_NATS_SERVER")
	if bin == "" {
		t.Skip("set TERN_REF_NATS_SERVER to a nats-server v2.15.2 binary")
	}
	pauseScenario(t, ccStartRef(t, bin, ""), 1)
}

func pauseScenario(t *testing.T, nc *nats.Conn, replicas int) {
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	consumerStreamR(t, js, jetstream.FileStorage, 2, replicas)
	adv, err := nc.SubscribeSync(JSAdvisoryConsumerPausePre + ".S.D")
	if err != nil {
		t.Fatal(err)
	}
	c, err := js.CreateOrUpdateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	nextAdv := func() JSConsumerPauseAdvisory {
		m, err := adv.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var a JSConsumerPauseAdvisory
		if err := json.Unmarshal(m.Data, &a); err != nil || a.Type != JSConsumerPauseAdvisoryType || a.ID == "" {
			t.Fatalf("advisory %s: %v", m.Data, err)
		}
		return a
	}
	fetch := func(wait time.Duration) int {
		b, err := c.Fetch(2, jetstream.FetchMaxWait(wait))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for range b.Messages() {
			n++
		}
		return n
	}
	// Paused far ahead, then resumed by the API.
	until := time.Now().Add(time.Hour).UTC()
	pr, err := js.PauseConsumer(ctx(t), "S", "D", until)
	if err != nil || !pr.Paused || !pr.PauseUntil.Equal(until) || pr.PauseRemaining <= 0 {
		t.Fatalf("pause: %+v %v", pr, err)
	}
	if a := nextAdv(); !a.Paused || !a.PauseUntil.Equal(until) || a.Stream != "S" || a.Consumer != "D" {
		t.Fatalf("pause advisory %+v", a)
	}
	if ci := consumerInfo(t, c); !ci.Paused || ci.Config.PauseUntil == nil || !ci.Config.PauseUntil.Equal(until) {
		t.Fatalf("info while paused: paused %v config %v", ci.Paused, ci.Config.PauseUntil)
	}
	if n := fetch(200 * time.Millisecond); n != 0 {
		t.Fatalf("paused consumer delivered %d", n)
	}
	rr, err := js.ResumeConsumer(ctx(t), "S", "D")
	if err != nil || rr.Paused {
		t.Fatalf("resume: %+v %v", rr, err)
	}
	if a := nextAdv(); a.Paused {
		t.Fatalf("resume advisory %+v", a)
	}
	if n := fetch(2 * time.Second); n != 2 {
		t.Fatalf("resumed consumer delivered %d", n)
	}
	// Paused briefly: the pause ends by itself and a waiting request is served.
	if _, err := js.Publish(ctx(t), "s.3", nil); err != nil {
		t.Fatal(err)
	}
	until = time.Now().Add(300 * time.Millisecond).UTC()
	if _, err := js.PauseConsumer(ctx(t), "S", "D", until); err != nil {
		t.Fatal(err)
	}
	nextAdv()
	if n := fetch(3 * time.Second); n != 1 {
		t.Fatalf("after the pause ended: %d", n)
	}
	if a := nextAdv(); a.Paused || !a.PauseUntil.Equal(until) {
		t.Fatalf("end-of-pause advisory %+v", a)
	}
	if _, err := js.PauseConsumer(ctx(t), "S", "NOPE", until); apiCode(err) != 10014 {
		t.Fatalf("pause of a missing consumer: %v", err)
	}
	m, err := nc.Request("$JS.API.CONSUMER.PAUSE.NOPE.D", nil, 5*time.Second)
	if err != nil || string(m.Data) != `{"type":"io.nats.jetstream.api.v1.consumer_pause_response","error":{"code":404,"err_code":10059,"description":"stream not found"},"paused":false,"pause_until":"0001-01-01T00:00:00Z"}` {
		t.Fatalf("pause in a missing stream: %v %s", err, m.Data)
	}
	// Created paused: a pause advisory, and the pause ends by itself.
	padv, err := nc.SubscribeSync(JSAdvisoryConsumerPausePre + ".S.P")
	if err != nil {
		t.Fatal(err)
	}
	until = time.Now().Add(500 * time.Millisecond).UTC()
	p, err := js.CreateOrUpdateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "P", PauseUntil: &until})
	if err != nil || !p.CachedInfo().Paused {
		t.Fatalf("created paused: %v", err)
	}
	for _, paused := range []bool{true, false} {
		m, err := padv.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var a JSConsumerPauseAdvisory
		if err := json.Unmarshal(m.Data, &a); err != nil || a.Paused != paused || !a.PauseUntil.Equal(until) {
			t.Fatalf("advisory %s, want paused %v", m.Data, paused)
		}
	}
	if ci := consumerInfo(t, p); ci.Paused {
		t.Fatal("still paused after the pause ended")
	}
}
