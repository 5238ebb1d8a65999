package server

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestJetStreamClusterConsumerPauseResumesAlike: a durable R3 consumer
// created paused delivers once the pause has passed, and its replicas'
// states agree. The leader's resume timer proposes the end of the pause;
// deliveries check the pause against their entries' stamps.
func TestJetStreamClusterConsumerPauseResumesAlike(t *testing.T) {
	c, _, js, _ := ccSetup(t, 3)
	until := time.Now().Add(700 * time.Millisecond)
	cons, err := js.CreateOrUpdateConsumer(ctx(t), "CC", jetstream.ConsumerConfig{Durable: "P",
		AckPolicy: jetstream.AckExplicitPolicy, PauseUntil: &until})
	if err != nil {
		t.Fatal(err)
	}
	if !cons.CachedInfo().Paused {
		t.Fatalf("created paused, info says %+v", cons.CachedInfo())
	}
	waitFor(t, 10*time.Second, "the resume", func() bool {
		ci := ccInfo(t, js, "P")
		return !ci.Paused && time.Now().After(until)
	})
	msgs, err := cons.Fetch(3, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for m := range msgs.Messages() {
		n++
		_ = m.Ack()
	}
	if n != 3 {
		t.Fatalf("fetched %d after the pause, want 3", n)
	}
	checkConsumersAgree(t, c, "CC")
}
