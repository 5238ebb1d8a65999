package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A config update of a replicated stream is applied from its log on every
// replica, and what the new config asks of the stored messages follows on
// every replica: a shorter max_age re-arms the leader's expiry (without it
// the timer armed for the old max_age kept every message until then), and
// limits → interest retention removes what no consumer needs (the update
// path of a single server did it, the replicated apply did not).

// runUpdateStream starts 3 servers with stream cfg holding n messages.
func runUpdateStream(t *testing.T, cfg jetstream.StreamConfig, n int) (*jsTestCluster, jetstream.JetStream, jetstream.Stream) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	st := createStream(t, js, cfg)
	for i := range n {
		if _, err := js.Publish(ctx(t), fmt.Sprintf("%s.%d", strings.TrimSuffix(cfg.Subjects[0], ".>"), i%4), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	return c, js, st
}

func TestJetStreamClusterUpdateShorterMaxAge(t *testing.T) {
	cfg := jetstream.StreamConfig{Name: "UA", Subjects: []string{"ua.>"}, Replicas: 3, MaxAge: time.Hour}
	c, js, _ := runUpdateStream(t, cfg, 20)
	c.waitAllApplied(t, "UA", 3, 20, 10*time.Second)
	cfg.MaxAge = 500 * time.Millisecond
	if _, err := js.UpdateStream(ctx(t), cfg); err != nil {
		t.Fatal(err)
	}
	checkReplicasAgree(t, c, "UA", 0) // every replica expires all 20, with the same digest
}

func TestJetStreamClusterUpdateToInterest(t *testing.T) {
	cfg := jetstream.StreamConfig{Name: "UI", Subjects: []string{"ui.>"}, Replicas: 3}
	c, js, st := runUpdateStream(t, cfg, 10)
	cons, err := st.CreateOrUpdateConsumer(ctx(t), jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := cons.Fetch(4, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for m := range msgs.Messages() {
		if err := m.DoubleAck(ctx(t)); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 4 {
		t.Fatalf("fetched %d messages, want 4 (%v)", n, msgs.Error())
	}
	cfg.Retention = jetstream.InterestPolicy
	if _, err := js.UpdateStream(ctx(t), cfg); err != nil {
		t.Fatal(err)
	}
	checkReplicasAgree(t, c, "UI", 6) // the 4 acknowledged by the only consumer go everywhere
}

// Removing max_age stops the expiry: the timer armed for the old max_age
// computed its cut-off from max_age 0, "now", and removed every message.
func TestJetStreamClusterUpdateRemovesMaxAge(t *testing.T) {
	cfg := jetstream.StreamConfig{Name: "UR", Subjects: []string{"ur.>"}, Replicas: 3, MaxAge: time.Second}
	c, js, _ := runUpdateStream(t, cfg, 10)
	cfg.MaxAge = 0
	if _, err := js.UpdateStream(ctx(t), cfg); err != nil {
		t.Fatal(err)
	}
	c.waitAllApplied(t, "UR", 3, 10, 10*time.Second)
	deadline := time.Now().Add(3 * time.Second) // past the old timer, with its retries
	for time.Now().Before(deadline) {
		for _, m := range c.replicas("UR") {
			var ss StreamState
			m.st().FastState(&ss)
			if ss.Msgs != 10 {
				t.Fatalf("%s holds %d messages after max_age was removed, want 10", m.jsa.js.srv.Name(), ss.Msgs)
			}
		}
		time.Sleep(20 * time.Millisecond) // polling the replicas' stores
	}
}
