package server

import (
	"errors"

	"fmt"
	"github.com/nats-io/nats.go"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// An idle pull request with idle_heartbeat gets 100 Idle Heartbeat
// statuses carrying what it still wants.
func TestConsumerPullHeartbeat(t *testing.T) {
	s := runJSServer(t)
	_, js := jsClient(t, s)
	consumerStream(t, js, jetstream.MemoryStorage, 0)
	if _, err := js.CreateOrUpdateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	nc := connectNATS(t, s.ClientURL())
	sub, _ := nc.SubscribeSync("hb.inbox")
	req := `{"batch":3,"max_bytes":1000,"expires":2000000000,"idle_heartbeat":100000000}`
	if err := nc.PublishRequest("$JS.API.CONSUMER.MSG.NEXT.S.D", "hb.inbox", []byte(req)); err != nil {
		t.Fatal(err)
	}
	m, err := sub.NextMsg(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if m.Header.Get("Status") != "100" || m.Header.Get("Description") != "Idle Heartbeat" ||
		m.Header.Get("Nats-Pending-Messages") != "3" || m.Header.Get("Nats-Pending-Bytes") != "1000" || len(m.Data) != 0 {
		t.Fatalf("heartbeat: %+v", m)
	}
}

// max_deliver stops redeliveries; max_bytes ends a request with 409.
func TestConsumerMaxDeliverAndMaxBytes(t *testing.T) {
	s := runJSServer(t)
	_, js := jsClient(t, s)
	consumerStream(t, js, jetstream.MemoryStorage, 1)
	c, err := js.CreateOrUpdateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		m, err := c.Next()
		if err != nil {
			t.Fatal(err)
		}
		if md, _ := m.Metadata(); md.NumDelivered != uint64(i) {
			t.Fatalf("delivery %d: %+v", i, md)
		}
		m.Nak()
	}
	if _, err := c.Next(jetstream.FetchMaxWait(300 * time.Millisecond)); err == nil {
		t.Fatal("delivered a third time past max_deliver 2")
	}
	nc := connectNATS(t, s.ClientURL())
	js.Publish(ctx(t), "s.big", make([]byte, 100))
	m, err := nc.Request("$JS.API.CONSUMER.MSG.NEXT.S.D", []byte(`{"batch":1,"max_bytes":50}`), time.Second)
	if err != nil || m.Header.Get("Status") != "409" || m.Header.Get("Description") != "Message Size Exceeds MaxBytes" {
		t.Fatalf("max_bytes: %v %+v", err, m)
	}
}

// nats.go's ordered consumer (an ephemeral AckNone pull consumer) reads
// the stream in order.
func TestConsumerOrderedPull(t *testing.T) {
	s := runJSServer(t)
	_, js := jsClient(t, s)
	consumerStream(t, js, jetstream.FileStorage, 10)
	oc, err := js.OrderedConsumer(ctx(t), "S", jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 10; i++ {
		m, err := oc.Next(jetstream.FetchMaxWait(2 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Data()) != fmt.Sprintf("m%d", i) {
			t.Fatalf("ordered %d: %q", i, m.Data())
		}
	}
}

// A message past its ack wait with nobody pulling sits once in the
// redelivery queue: the ack-wait timer does not spin or queue it again.
func TestConsumerDueWithoutRequests(t *testing.T) {
	s := runJSServer(t)
	_, js := jsClient(t, s)
	consumerStream(t, js, jetstream.MemoryStorage, 1)
	c, err := js.CreateOrUpdateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Next(); err != nil {
		t.Fatal(err)
	}
	mset := s.js.Load().account("$G").lookup("S")
	queued := func() int {
		mset.mu.Lock()
		defer mset.mu.Unlock()
		return len(mset.consumers["D"].rdq)
	}
	waitFor(t, 2*time.Second, "the message to be due", func() bool { return queued() == 1 })
	time.Sleep(200 * time.Millisecond) // ten ack waits with nobody pulling
	if n := queued(); n != 1 {
		t.Fatalf("redelivery queue holds %d entries for one message", n)
	}
	m, err := c.Next()
	if err != nil {
		t.Fatal(err)
	}
	if md, _ := m.Metadata(); md.NumDelivered != 2 {
		t.Fatalf("redelivery: %+v", md)
	}
}

// max_bytes counts subject, ack subject, headers and payload, as
// nats-server: a request for exactly one message's size gets it, one byte
// less gets 409.
func TestConsumerMaxBytesExact(t *testing.T) {
	s := runJSServer(t)
	_, js := jsClient(t, s)
	consumerStream(t, js, jetstream.MemoryStorage, 1)
	if _, err := js.CreateOrUpdateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	nc := connectNATS(t, s.ClientURL())
	m, err := nc.Request("$JS.API.CONSUMER.MSG.NEXT.S.D", []byte(`{"batch":1,"max_bytes":1000}`), time.Second)
	if err != nil || string(m.Data) != "m1" {
		t.Fatalf("first: %v %+v", err, m)
	}
	m.Nak()
	size := len(m.Subject) + len(m.Reply) + len(m.Data) // the redelivery's ack subject has the same length
	m, err = nc.Request("$JS.API.CONSUMER.MSG.NEXT.S.D", []byte(fmt.Sprintf(`{"batch":1,"max_bytes":%d}`, size-1)), time.Second)
	if err != nil || m.Header.Get("Status") != "409" {
		t.Fatalf("one byte short: %v %+v", err, m)
	}
	m, err = nc.Request("$JS.API.CONSUMER.MSG.NEXT.S.D", []byte(fmt.Sprintf(`{"batch":1,"max_bytes":%d}`, size)), time.Second)
	if err != nil || string(m.Data) != "m1" {
		t.Fatalf("exact size: %v %+v", err, m)
	}
	// A pull request for a consumer that does not exist: no responders.
	if _, err := nc.Request("$JS.API.CONSUMER.MSG.NEXT.S.nope", nil, time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("unknown consumer: %v", err)
	}
}

// Ack policy all acknowledges everything up to the message; +NXT acks and
// asks for the next message on the same reply; +WPI restarts the ack wait.
func TestConsumerAckAllNextProgress(t *testing.T) {
	s := runJSServer(t)
	_, js := jsClient(t, s)
	consumerStream(t, js, jetstream.MemoryStorage, 5)
	all, err := js.CreateOrUpdateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "ALL", AckPolicy: jetstream.AckAllPolicy})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := all.Fetch(3)
	var msgs []jetstream.Msg
	for m := range b.Messages() {
		msgs = append(msgs, m)
	}
	if len(msgs) != 3 {
		t.Fatalf("fetched %d", len(msgs))
	}
	if err := msgs[1].DoubleAck(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if ci := consumerInfo(t, all); ci.NumAckPending != 1 || ci.AckFloor.Stream != 2 || ci.AckFloor.Consumer != 2 {
		t.Fatalf("ack all: %+v", ci)
	}

	ex, err := js.CreateOrUpdateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "EX", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	nc := connectNATS(t, s.ClientURL())
	m, err := nc.Request("$JS.API.CONSUMER.MSG.NEXT.S.EX", nil, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	m, err = nc.Request(m.Reply, []byte("+NXT"), time.Second) // acks 1, gets 2
	if err != nil || string(m.Data) != "m2" {
		t.Fatalf("+NXT: %v %+v", err, m)
	}
	if ci := consumerInfo(t, ex); ci.AckFloor.Stream != 1 || ci.NumAckPending != 1 {
		t.Fatalf("after +NXT: %+v", ci)
	}
	// +WPI keeps message 2 from redelivery past its first ack wait.
	deadline := time.Now().Add(600 * time.Millisecond)
	for time.Now().Before(deadline) {
		if _, err := nc.Request(m.Reply, []byte("+WPI"), time.Second); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if ci := consumerInfo(t, ex); ci.NumRedelivered != 0 || ci.NumAckPending != 1 {
		t.Fatalf("after +WPI: %+v", ci)
	}
	r, err := nc.Request("$JS.API.CONSUMER.MSG.NEXT.S.EX", []byte(`{"batch":1,"expires":1000000000}`), 2*time.Second)
	if err != nil || string(r.Data) != "m3" {
		t.Fatalf("next after +WPI: %v %+v", err, r)
	}
}

// Deliveries reach the client in the order they were applied, while many
// publishers wake the consumer at once: consumer sequences arrive without
// gaps (nats.go's ordered consumer resets on one).
func TestConsumerDeliveryOrderConcurrentPublishers(t *testing.T) {
	s := runJSServer(t)
	_, js := jsClient(t, s)
	consumerStream(t, js, jetstream.MemoryStorage, 0)
	c, err := js.CreateOrUpdateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckNonePolicy})
	if err != nil {
		t.Fatal(err)
	}
	const pubs, each = 8, 250
	got := make(chan uint64, pubs*each)
	cc, err := c.Consume(func(m jetstream.Msg) {
		md, _ := m.Metadata()
		got <- md.Sequence.Consumer
	}, jetstream.PullMaxMessages(pubs*each))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Stop()
	waitFor(t, 2*time.Second, "the pull request", func() bool { return consumerInfo(t, c).NumWaiting > 0 })
	for p := 0; p < pubs; p++ {
		pc := connectNATS(t, s.ClientURL())
		go func() {
			for i := 0; i < each; i++ {
				pc.Publish("s.x", nil)
			}
			pc.Flush()
		}()
	}
	for want := uint64(1); want <= pubs*each; want++ {
		select {
		case seq := <-got:
			if seq != want {
				t.Fatalf("consumer sequence %d arrived when %d was due", seq, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("waiting for consumer sequence %d", want)
		}
	}
}

// A waiting request whose client went away receives nothing: the message
// stays for the next request, delivered once.
func TestConsumerRequestWithoutInterest(t *testing.T) {
	s := runJSServer(t)
	_, js := jsClient(t, s)
	consumerStream(t, js, jetstream.MemoryStorage, 0)
	c, err := js.CreateOrUpdateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	gone := connectNATS(t, s.ClientURL())
	sub, _ := gone.SubscribeSync("gone.inbox")
	gone.PublishRequest("$JS.API.CONSUMER.MSG.NEXT.S.D", "gone.inbox", []byte(`{"batch":5}`))
	gone.Flush()
	waitFor(t, 2*time.Second, "the request", func() bool { return consumerInfo(t, c).NumWaiting == 1 })
	sub.Unsubscribe()
	gone.Close()
	acc := s.js.Load().account("$G").acc
	waitFor(t, 2*time.Second, "the inbox to lose interest", func() bool { return len(matchSubject(acc, "gone.inbox").Plain) == 0 })
	js.Publish(ctx(t), "s.x", []byte("hello"))
	if ci := consumerInfo(t, c); ci.NumAckPending != 0 || ci.NumWaiting != 0 || ci.NumPending != 1 {
		t.Fatalf("after the publish: %+v", ci)
	}
	m, err := c.Next()
	if err != nil {
		t.Fatal(err)
	}
	if md, _ := m.Metadata(); md.NumDelivered != 1 || md.Sequence.Consumer != 1 {
		t.Fatalf("delivered %+v", md)
	}
}

// Pull requests are not API calls: nats-server's account info does not
// count them.
func TestConsumerPullNotCountedAsAPI(t *testing.T) {
	s := runJSServer(t)
	_, js := jsClient(t, s)
	consumerStream(t, js, jetstream.MemoryStorage, 3)
	c, err := js.CreateOrUpdateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	before, err := js.AccountInfo(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := c.Next(); err != nil {
			t.Fatal(err)
		}
	}
	after, err := js.AccountInfo(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if after.API.Total != before.API.Total+1 {
		t.Fatalf("API total went from %d to %d over three pulls and one INFO", before.API.Total, after.API.Total)
	}
}

// An update keeps the consumer's position and takes effect at once; a
// create with another config is refused with 10148.
func TestConsumerUpdateKeepsState(t *testing.T) {
	s := runJSServer(t)
	_, js := jsClient(t, s)
	consumerStream(t, js, jetstream.FileStorage, 4)
	cfg := jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckExplicitPolicy}
	c, err := js.CreateConsumer(ctx(t), "S", cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := c.Next()
	m.DoubleAck(ctx(t))
	cfg.MaxAckPending = 1
	cfg.Description = "updated"
	var ae *jetstream.APIError
	if _, err := js.CreateConsumer(ctx(t), "S", cfg); !errors.As(err, &ae) || ae.ErrorCode != 10148 {
		t.Fatalf("create with another config: %v", err)
	}
	c, err = js.UpdateConsumer(ctx(t), "S", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if ci := consumerInfo(t, c); ci.Config.Description != "updated" || ci.AckFloor.Stream != 1 || ci.NumPending != 3 {
		t.Fatalf("after update: %+v", ci)
	}
	b, _ := c.Fetch(3, jetstream.FetchMaxWait(300*time.Millisecond))
	n := 0
	for range b.Messages() {
		n++
	}
	if n != 1 {
		t.Fatalf("max_ack_pending 1 let %d through", n)
	}
	if _, err := js.UpdateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "NOPE", AckPolicy: jetstream.AckExplicitPolicy}); !errors.Is(err, jetstream.ErrConsumerDoesNotExist) {
		t.Fatalf("update of a missing consumer: %v", err)
	}
}

// Malformed pull requests get nats-server's 400 statuses.
func TestConsumerPullBadRequests(t *testing.T) {
	s := runJSServer(t)
	_, js := jsClient(t, s)
	consumerStream(t, js, jetstream.MemoryStorage, 1)
	if _, err := js.CreateOrUpdateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckExplicitPolicy, MaxRequestBatch: 10}); err != nil {
		t.Fatal(err)
	}
	nc := connectNATS(t, s.ClientURL())
	for body, want := range map[string]string{
		`{"batch":`:                                   "400 Bad Request - unexpected end of JSON input",
		`{"batch":1,"idle_heartbeat":1000000}`:        "400 Bad Request - heartbeat value too large",
		`{"batch":1,"expires":10,"idle_heartbeat":6}`: "400 Bad Request - heartbeat value too large",
		`{"batch":11}`:                                "409 Exceeded MaxRequestBatch of 10",
	} {
		m, err := nc.Request("$JS.API.CONSUMER.MSG.NEXT.S.D", []byte(body), time.Second)
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if got := m.Header.Get("Status") + " " + m.Header.Get("Description"); got != want {
			t.Fatalf("%s: %q, want %q", body, got, want)
		}
	}
	// Not JSON and not a number: one message, as nats-server.
	m, err := nc.Request("$JS.API.CONSUMER.MSG.NEXT.S.D", []byte("x"), time.Second)
	if err != nil || string(m.Data) != "m1" {
		t.Fatalf("non-JSON body: %v %+v", err, m)
	}
}

// Waiting requests of a deleted consumer, or of a consumer of a deleted
// stream, get 409 Consumer Deleted (nats.go: ErrConsumerDeleted).
func TestConsumerDeletedReleasesRequests(t *testing.T) {
	s := runJSServer(t)
	_, js := jsClient(t, s)
	for _, deleteStream := range []bool{false, true} {
		consumerStream(t, js, jetstream.FileStorage, 0)
		c, err := js.CreateOrUpdateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckExplicitPolicy})
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, 2*time.Second, "the request", func() bool { return consumerInfo(t, c).NumWaiting == 1 })
		start := time.Now()
		if deleteStream {
			err = js.DeleteStream(ctx(t), "S")
		} else {
			err = js.DeleteConsumer(ctx(t), "S", "D")
		}
		if err != nil {
			t.Fatal(err)
		}
		for range b.Messages() {
		}
		if !errors.Is(b.Error(), jetstream.ErrConsumerDeleted) || time.Since(start) > 2*time.Second {
			t.Fatalf("delete (stream %v): fetch ended with %v after %v", deleteStream, b.Error(), time.Since(start))
		}
		if !deleteStream {
			js.DeleteStream(ctx(t), "S")
		}
	}
}
