package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// With no max_consumers on the stream or the account, a stream takes
// nats-server's default of 1,000 consumers (default_max_consumers 0), and
// -1 lifts it.
func TestConsumerLimitsServerDefault(t *testing.T) {
	s := runJSServer(t)
	_, js := jsClient(t, s)
	createStream(t, js, jetstream.StreamConfig{Name: "D", Subjects: []string{"d"}})
	for i := 0; i < JSDefaultMaxConsumersPerStream; i++ {
		if _, err := js.CreateOrUpdateConsumer(ctx(t), "D", jetstream.ConsumerConfig{Durable: "C" + strconv.Itoa(i)}); err != nil {
			t.Fatalf("consumer %d: %v", i, err)
		}
	}
	_, err := js.CreateOrUpdateConsumer(ctx(t), "D", jetstream.ConsumerConfig{Durable: "over"})
	if err == nil || retErr(err) != "400 10026 maximum consumers limit reached" {
		t.Fatalf("consumer 1,001 without limits: %v", err)
	}
	if _, err := js.CreateOrUpdateConsumer(ctx(t), "D", jetstream.ConsumerConfig{Durable: "C0", Description: "x"}); err != nil {
		t.Fatalf("an update at the limit: %v", err)
	}
	st := &consumerCreateState{Stream: &StreamConfig{MaxConsumers: -1}, Limits: consumerLimits{Server: JSLimitOpts{DefaultMaxConsumers: -1}}}
	if got := maxConsumersFor(st); got > 0 {
		t.Fatalf("default_max_consumers -1: limit %d", got)
	}
}

// A replicated stream's max_consumers holds in a cluster too (the
// stream's leader decides the create).
func TestConsumerLimitsClustered(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "M", Subjects: []string{"m"}, Replicas: 3, MaxConsumers: 2})
	for _, name := range []string{"A", "B"} {
		if _, err := js.CreateOrUpdateConsumer(ctx(t), "M", jetstream.ConsumerConfig{Durable: name}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := js.CreateOrUpdateConsumer(ctx(t), "M", jetstream.ConsumerConfig{Durable: "C"})
	if err == nil || retErr(err) != "400 10026 maximum consumers limit reached" {
		t.Fatalf("third consumer with max_consumers 2: %v", err)
	}
}

// jetstream { limits {} } in a config file sets the server-wide consumer
// limits nats-server reads from it: default_max_consumers (10026 past
// it), max_ack_pending (the default of a new consumer, and 10121 above
// it) and max_request_batch.
func TestConsumerLimitsFromConfigFile(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "js.conf")
	body := fmt.Sprintf("listen: \"127.0.0.1:-1\"\njetstream {\n  store_dir: %q\n  limits {\n    default_max_consumers: 2\n    max_ack_pending: 50\n    max_request_batch: 10\n  }\n}\n", t.TempDir())
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := ProcessConfigFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	o.NoLog, o.NoSigs = true, true
	s := runServer(t, o)
	_, js := jsClient(t, s)
	createStream(t, js, jetstream.StreamConfig{Name: "L", Subjects: []string{"l"}})
	c, err := js.CreateOrUpdateConsumer(ctx(t), "L", jetstream.ConsumerConfig{Durable: "A", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	if cfg := c.CachedInfo().Config; cfg.MaxAckPending != 50 || cfg.MaxRequestBatch != 10 {
		t.Fatalf("defaults from the server limits: max_ack_pending %d, max_request_batch %d", cfg.MaxAckPending, cfg.MaxRequestBatch)
	}
	_, err = js.CreateOrUpdateConsumer(ctx(t), "L", jetstream.ConsumerConfig{Durable: "X", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 51})
	if err == nil || !strings.Contains(retErr(err), "10121 consumer max ack pending exceeds system limit of 50") {
		t.Fatalf("max_ack_pending above the server's: %v", err)
	}
	if _, err := js.CreateOrUpdateConsumer(ctx(t), "L", jetstream.ConsumerConfig{Durable: "B"}); err != nil {
		t.Fatal(err)
	}
	_, err = js.CreateOrUpdateConsumer(ctx(t), "L", jetstream.ConsumerConfig{Durable: "C"})
	if err == nil || retErr(err) != "400 10026 maximum consumers limit reached" {
		t.Fatalf("third consumer with default_max_consumers 2: %v", err)
	}
}
