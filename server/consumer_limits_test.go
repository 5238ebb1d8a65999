package server

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Consumer limits of the stream (max_consumers, consumer_limits) and of
// the account (max_consumers, max_ack_pending), with nats-server's errors
// (the same answers nats-server v2.15.2 gives with this configuration).
func TestConsumerLimitsStreamAndAccount(t *testing.T) {
	js := limitedAccount(t, "max_consumers: 2, max_ack_pending: 50")
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "S", Subjects: []string{"s"}}); err != nil {
		t.Fatal(err)
	}
	ai, err := js.AccountInfo(ctx(t))
	if err != nil || ai.Limits.MaxConsumers != 2 || ai.Limits.MaxAckPending != 50 {
		t.Fatalf("account info limits %+v %v", ai, err)
	}
	c, err := js.CreateOrUpdateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "A", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil || c.CachedInfo().Config.MaxAckPending != 50 {
		t.Fatalf("default max_ack_pending under the account's: %v %v", c, err)
	}
	_, err = js.CreateOrUpdateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "B", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 51})
	if retErr(err) != "400 10121 consumer max ack pending exceeds system limit of 50" {
		t.Fatalf("max_ack_pending above the account's: %v", err)
	}
	if _, err := js.CreateOrUpdateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "B"}); err != nil {
		t.Fatal(err)
	}
	if _, err = js.CreateOrUpdateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "C"}); retErr(err) != "400 10026 maximum consumers limit reached" {
		t.Fatalf("third consumer with account max_consumers 2: %v", err)
	}

	// The stream's own max_consumers, and consumer_limits.
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "T", Subjects: []string{"t"}, MaxConsumers: 1,
		ConsumerLimits: jetstream.StreamConsumerLimits{InactiveThreshold: time.Minute, MaxAckPending: 10}}); err != nil {
		t.Fatal(err)
	}
	c, err = js.CreateOrUpdateConsumer(ctx(t), "T", jetstream.ConsumerConfig{Durable: "A", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	if cfg := c.CachedInfo().Config; cfg.MaxAckPending != 10 || cfg.InactiveThreshold != time.Minute {
		t.Fatalf("consumer_limits defaults: max_ack_pending %d inactive_threshold %v", cfg.MaxAckPending, cfg.InactiveThreshold)
	}
	if _, err = js.CreateOrUpdateConsumer(ctx(t), "T", jetstream.ConsumerConfig{Durable: "B"}); retErr(err) != "400 10026 maximum consumers limit reached" {
		t.Fatalf("second consumer with stream max_consumers 1: %v", err)
	}
	_, err = js.CreateOrUpdateConsumer(ctx(t), "T", jetstream.ConsumerConfig{Durable: "A", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 11})
	if retErr(err) != "400 10121 consumer max ack pending exceeds system limit of 10" {
		t.Fatalf("max_ack_pending above consumer_limits: %v", err)
	}
}
