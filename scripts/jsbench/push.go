package main

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// runPush reads a filled stream back with a durable push consumer (deliver
// subject, explicit acks, flow control, the legacy nats.go JetStream
// subscription that answers flow control itself), acking each message
// asynchronously, and reports messages per second from the subscription
// until the last message was received.
func runPush(url, stream string, n int) {
	nc, err := nats.Connect(url, nats.MaxReconnects(-1))
	if err != nil {
		fatal("connect: " + err.Error())
	}
	defer nc.Close()
	js, err := nc.JetStream(nats.PublishAsyncMaxPending(256))
	if err != nil {
		fatal(err.Error())
	}
	var got atomic.Int64
	done := make(chan struct{})
	start := time.Now()
	sub, err := js.Subscribe("", func(m *nats.Msg) {
		m.Ack()
		if got.Add(1) == int64(n) {
			close(done)
		}
	}, nats.BindStream(stream), nats.Durable("pushbench"), nats.DeliverAll(), nats.AckExplicit(),
		nats.EnableFlowControl(), nats.IdleHeartbeat(5*time.Second), nats.MaxAckPending(1000))
	if err != nil {
		fatal("subscribe: " + err.Error())
	}
	defer sub.Unsubscribe()
	sub.SetPendingLimits(-1, -1)
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		fatal(fmt.Sprintf("push: %d of %d messages in 5 minutes", got.Load(), n))
	}
	el := time.Since(start)
	nc.Flush()
	fmt.Printf("rate=%.0f msgs=%d\n", float64(n)/el.Seconds(), n)
}
