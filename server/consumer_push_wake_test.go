package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestConsumerPushAcksFromAnotherConnection: the deliveries an ack lets
// through are woken when the acking client's read ends; when the acks come
// on another connection than the subscriber's, that read must still wake
// the subscriber's writer. Acks go one at a time, then in windows of 50 in
// one flush (one read on the server); every message must arrive in order,
// none waiting for a heartbeat or a timer.
func TestConsumerPushAcksFromAnotherConnection(t *testing.T) {
	const n = 300
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	consumerStream(t, js, jetstream.FileStorage, n)
	acker, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer acker.Close()
	sub, err := nc.SubscribeSync("dlv.w")
	if err != nil {
		t.Fatal(err)
	}
	ljs := legacyJS(t, nc)
	if _, err := ljs.AddConsumer("S", &nats.ConsumerConfig{Durable: "W", DeliverSubject: "dlv.w",
		AckPolicy: nats.AckExplicitPolicy, MaxAckPending: 50, AckWait: time.Minute}); err != nil {
		t.Fatal(err)
	}
	next := 1
	for next <= n {
		size := 50
		if next <= 100 {
			size = 1
		}
		var window []*nats.Msg
		for len(window) < size && next <= n {
			m := nextData(t, sub, 2*time.Second)
			if want := fmt.Sprintf("s.%d", next); m.Subject != want {
				t.Fatalf("got %s, want %s", m.Subject, want)
			}
			next++
			window = append(window, m)
		}
		for _, m := range window {
			acker.Publish(m.Reply, nil)
		}
		if err := acker.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 2*time.Second, "every ack applied", func() bool {
		ci := legacyInfo(t, ljs, "S", "W")
		return ci.NumAckPending == 0 && ci.AckFloor.Stream == n
	})
}

// TestConsumerUpdateMaxAckPendingDelivers: raising max_ack_pending lets
// the messages it held back go at once, to a push subscriber and to a
// waiting pull request, as nats-server's update does; not at the next
// ack or publish.
func TestConsumerUpdateMaxAckPendingDelivers(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	consumerStream(t, js, jetstream.FileStorage, 6)
	ljs := legacyJS(t, nc)
	t.Run("push", func(t *testing.T) {
		sub, err := nc.SubscribeSync("dlv.u")
		if err != nil {
			t.Fatal(err)
		}
		cfg := &nats.ConsumerConfig{Durable: "PU", DeliverSubject: "dlv.u", AckPolicy: nats.AckExplicitPolicy,
			MaxAckPending: 1, AckWait: time.Minute}
		if _, err := ljs.AddConsumer("S", cfg); err != nil {
			t.Fatal(err)
		}
		if m := nextData(t, sub, 2*time.Second); m.Subject != "s.1" {
			t.Fatalf("first delivery %s", m.Subject)
		}
		if m, err := sub.NextMsg(100 * time.Millisecond); err == nil && m.Header.Get("Status") == "" {
			t.Fatalf("delivered beyond max_ack_pending 1: %s", m.Subject)
		}
		cfg.MaxAckPending = 4
		if _, err := ljs.UpdateConsumer("S", cfg); err != nil {
			t.Fatal(err)
		}
		for i := 2; i <= 4; i++ {
			if m := nextData(t, sub, 2*time.Second); m.Subject != fmt.Sprintf("s.%d", i) {
				t.Fatalf("after the update: %s, want s.%d", m.Subject, i)
			}
		}
	})
	t.Run("pull", func(t *testing.T) {
		cfg := jetstream.ConsumerConfig{Durable: "PL", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 1, AckWait: time.Minute}
		c, err := js.CreateConsumer(ctx(t), "S", cfg)
		if err != nil {
			t.Fatal(err)
		}
		batch, err := c.Fetch(4, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan string, 4)
		go func() {
			for m := range batch.Messages() {
				got <- m.Subject()
			}
			close(got)
		}()
		if subj := <-got; subj != "s.1" {
			t.Fatalf("first delivery %s", subj)
		}
		waitFor(t, 2*time.Second, "the request waiting at max_ack_pending", func() bool {
			ci := consumerInfo(t, c)
			return ci.NumWaiting == 1 && ci.NumAckPending == 1
		})
		cfg.MaxAckPending = 4
		if _, err := js.UpdateConsumer(ctx(t), "S", cfg); err != nil {
			t.Fatal(err)
		}
		for i := 2; i <= 4; i++ {
			select {
			case subj := <-got:
				if subj != fmt.Sprintf("s.%d", i) {
					t.Fatalf("after the update: %s, want s.%d", subj, i)
				}
			case <-time.After(2 * time.Second):
				t.Fatalf("message %d not delivered after the update", i)
			}
		}
	})
}
