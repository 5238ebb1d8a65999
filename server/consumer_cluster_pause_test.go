package server

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestJetStreamClusterConsumerPauseResumesAlike: a durable R3 consumer
// created paused delivers once the pause has passed, and its replicas'
// states agree. (Log consumers arm no resume timer today: the pause ends
// by the entries' stamps; pauseFired proposes, never applies, should one
// be armed.)
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

// TestJetStreamClusterConsumerPinnedClientRefused: pinned_client priority
// groups are not carried through the log yet: a replicated stream refuses
// them instead of pinning on the leader alone.
func TestJetStreamClusterConsumerPinnedClientRefused(t *testing.T) {
	_, _, js, _ := ccSetup(t, 0)
	_, err := js.CreateOrUpdateConsumer(ctx(t), "CC", jetstream.ConsumerConfig{Durable: "PIN",
		AckPolicy: jetstream.AckExplicitPolicy, PriorityPolicy: jetstream.PriorityPolicyPinned,
		PriorityGroups: []string{"A"}, PinnedTTL: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Fatalf("pinned_client on an R3 stream: %v", err)
	}
}
