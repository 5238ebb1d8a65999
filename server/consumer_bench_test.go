package server

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// BenchmarkConsumerFetchAck: fetch in batches of 500 and ack each message,
// 128-byte messages, a file stream, as `nats bench js fetch`.
func BenchmarkConsumerFetchAck(b *testing.B) {
	s := runJSServer(b)
	nc, js := jsClient(b, s)
	if _, err := js.CreateStream(ctx(b), jetstream.StreamConfig{Name: "B", Subjects: []string{"b.>"}}); err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 128)
	for i := 0; i < b.N; i++ {
		js.PublishAsync("b.x", payload)
	}
	<-js.PublishAsyncComplete()
	c, err := js.CreateOrUpdateConsumer(ctx(b), "B", jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		b.Fatal(err)
	}
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
}
