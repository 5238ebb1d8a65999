package server

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// BenchmarkConsumerFetchAck: fetch in batches of 500 and ack each message,
// 128-byte messages, a file stream, as `nats bench js fetch`; under each
// retention (work queue and interest remove each message at its ack).
func BenchmarkConsumerFetchAck(b *testing.B) {
	for _, ret := range []jetstream.RetentionPolicy{jetstream.LimitsPolicy, jetstream.WorkQueuePolicy, jetstream.InterestPolicy} {
		b.Run(ret.String(), func(b *testing.B) { benchFetchAck(b, ret) })
	}
}

func benchFetchAck(b *testing.B, ret jetstream.RetentionPolicy) {
	s := runJSServer(b)
	nc, js := jsClient(b, s)
	if _, err := js.CreateStream(ctx(b), jetstream.StreamConfig{Name: "B", Subjects: []string{"b.>"}, Retention: ret}); err != nil {
		b.Fatal(err)
	}
	c, err := js.CreateOrUpdateConsumer(ctx(b), "B", jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 128)
	for i := 0; i < b.N; i++ {
		js.PublishAsync("b.x", payload)
	}
	<-js.PublishAsyncComplete()
	b.ResetTimer()
	n := 0
	for n < b.N {
		batch, err := c.Fetch(min(500, b.N-n), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			b.Fatal(err)
		}
		for m := range batch.Messages() {
			m.Ack()
			n++
		}
	}
	nc.Flush()
	if ret != jetstream.LimitsPolicy {
		b.StopTimer()
		waitFor(b, 5*time.Second, "the stream to empty", func() bool {
			st, err := js.Stream(ctx(b), "B")
			return err == nil && st.CachedInfo().State.Msgs == 0
		})
	}
}
