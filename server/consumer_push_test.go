package server

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// legacyJS is nats.go's legacy JetStream context (the push consumer API).
func legacyJS(t *testing.T, nc *nats.Conn) nats.JetStreamContext {
	t.Helper()
	js, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func nextMsg(t *testing.T, sub *nats.Subscription, d time.Duration) *nats.Msg {
	t.Helper()
	m, err := sub.NextMsg(d)
	if err != nil {
		t.Fatalf("next message on %s: %v", sub.Subject, err)
	}
	return m
}

// nextData skips status messages (heartbeats, flow control).
func nextData(t *testing.T, sub *nats.Subscription, d time.Duration) *nats.Msg {
	t.Helper()
	for {
		m := nextMsg(t, sub, d)
		if m.Header.Get("Status") == "" {
			return m
		}
	}
}

func legacyInfo(t *testing.T, js nats.JetStreamContext, stream, name string) *nats.ConsumerInfo {
	t.Helper()
	ci, err := js.ConsumerInfo(stream, name)
	if err != nil {
		t.Fatal(err)
	}
	return ci
}

func TestConsumerPushDeliverAckRedeliver(t *testing.T) {
	for _, st := range []jetstream.StorageType{jetstream.FileStorage, jetstream.MemoryStorage} {
		t.Run(st.String(), func(t *testing.T) {
			s := runJSServer(t)
			nc, js := jsClient(t, s)
			consumerStream(t, js, st, 3)
			ljs := legacyJS(t, nc)
			sub, err := nc.SubscribeSync("dlv.x")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ljs.AddConsumer("S", &nats.ConsumerConfig{Durable: "P", DeliverSubject: "dlv.x",
				AckPolicy: nats.AckExplicitPolicy, AckWait: 300 * time.Millisecond}); err != nil {
				t.Fatal(err)
			}
			for i := 1; i <= 3; i++ {
				m := nextData(t, sub, 2*time.Second)
				md, _ := m.Metadata()
				if m.Subject != fmt.Sprintf("s.%d", i) || string(m.Data) != fmt.Sprintf("m%d", i) || md.Sequence.Stream != uint64(i) || md.Sequence.Consumer != uint64(i) || md.NumPending != uint64(3-i) {
					t.Fatalf("delivery %d: %s %q %+v", i, m.Subject, m.Data, md)
				}
				if i != 2 {
					m.AckSync()
				}
			}
			// The one not acknowledged comes back after the ack wait.
			m := nextData(t, sub, 2*time.Second)
			md, _ := m.Metadata()
			if md.Sequence.Stream != 2 || md.NumDelivered != 2 || md.Sequence.Consumer != 4 {
				t.Fatalf("redelivery: %+v", md)
			}
			m.AckSync()
			ci := legacyInfo(t, ljs, "S", "P")
			if !ci.PushBound || ci.NumAckPending != 0 || ci.Delivered.Stream != 3 || ci.AckFloor.Stream != 3 {
				t.Fatalf("info: bound %v ack pending %d delivered %+v floor %+v", ci.PushBound, ci.NumAckPending, ci.Delivered, ci.AckFloor)
			}
			// Without a subscriber the consumer is not bound and sends nothing.
			sub.Unsubscribe()
			waitFor(t, 2*time.Second, "push_bound false", func() bool { return !legacyInfo(t, ljs, "S", "P").PushBound })
			js.Publish(ctx(t), "s.4", []byte("m4"))
			if ci := legacyInfo(t, ljs, "S", "P"); ci.Delivered.Stream != 3 || ci.NumPending != 1 {
				t.Fatalf("unbound consumer delivered: %+v pending %d", ci.Delivered, ci.NumPending)
			}
			// A new subscriber on a wildcard covering the deliver subject binds it.
			sub2, _ := nc.SubscribeSync("dlv.*")
			if m := nextData(t, sub2, 2*time.Second); m.Subject != "s.4" {
				t.Fatalf("after rebinding: %s", m.Subject)
			}
		})
	}
}

func TestConsumerPushPullRequestRefused(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	consumerStream(t, js, jetstream.MemoryStorage, 1)
	if _, err := legacyJS(t, nc).AddConsumer("S", &nats.ConsumerConfig{Durable: "P", DeliverSubject: "dlv", AckPolicy: nats.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	m, err := nc.Request(jsAPIPrefix+"CONSUMER.MSG.NEXT.S.P", nil, time.Second)
	if err != nil || m.Header.Get("Status") != "409" || m.Header.Get("Description") != "Consumer is push based" {
		t.Fatalf("pull request to a push consumer: %v %+v", err, m)
	}
}

func TestConsumerPushHeartbeatExactBytes(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	consumerStream(t, js, jetstream.MemoryStorage, 2)
	r := dialRaw(t, s)
	r.connect(`{"verbose":false,"headers":true,"protocol":1}`)
	r.send("SUB hb 1\r\nPING\r\n")
	r.expect("PONG\r\n")
	if _, err := legacyJS(t, nc).AddConsumer("S", &nats.ConsumerConfig{Durable: "H", DeliverSubject: "hb",
		AckPolicy: nats.AckNonePolicy, Heartbeat: 100 * time.Millisecond, FilterSubject: "s.1"}); err != nil {
		t.Fatal(err)
	}
	if got := r.line(); !strings.HasPrefix(got, "MSG s.1 1 $JS.ACK.S.H.1.1.1.") || !strings.HasSuffix(got, ".0 2\r\n") {
		t.Fatalf("delivery: %q", got)
	}
	r.expect("m1\r\n")
	// s.2 does not match: the heartbeat reports the last stream sequence looked at.
	hdr := "NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 1\r\nNats-Last-Stream: 2\r\n\r\n"
	r.expect(fmt.Sprintf("HMSG hb 1 %d %d\r\n%s\r\n", len(hdr), len(hdr), hdr))
}

func TestConsumerPushHeadersOnly(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	consumerStream(t, js, jetstream.MemoryStorage, 0)
	js.PublishMsg(ctx(t), &nats.Msg{Subject: "s.h", Header: nats.Header{"A": []string{"b"}}, Data: []byte("twelve bytes")})
	js.Publish(ctx(t), "s.n", []byte("abc"))
	sub, _ := nc.SubscribeSync("ho")
	if _, err := legacyJS(t, nc).AddConsumer("S", &nats.ConsumerConfig{Durable: "HO", DeliverSubject: "ho", AckPolicy: nats.AckNonePolicy, HeadersOnly: true}); err != nil {
		t.Fatal(err)
	}
	m := nextData(t, sub, 2*time.Second)
	if len(m.Data) != 0 || m.Header.Get("A") != "b" || m.Header.Get(JSMsgSize) != "12" {
		t.Fatalf("headers only with headers: %q %v", m.Data, m.Header)
	}
	m = nextData(t, sub, 2*time.Second)
	if len(m.Data) != 0 || m.Header.Get(JSMsgSize) != "3" {
		t.Fatalf("headers only without headers: %q %v", m.Data, m.Header)
	}
}

func TestConsumerPushDeliverGroup(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	consumerStream(t, js, jetstream.MemoryStorage, 0)
	a, _ := nc.QueueSubscribeSync("grp", "Q")
	b, _ := nc.QueueSubscribeSync("grp", "Q")
	if _, err := legacyJS(t, nc).AddConsumer("S", &nats.ConsumerConfig{Durable: "G", DeliverSubject: "grp", DeliverGroup: "Q", AckPolicy: nats.AckNonePolicy}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		js.Publish(ctx(t), "s.x", []byte("x"))
	}
	waitFor(t, 2*time.Second, "100 deliveries", func() bool {
		na, _, _ := a.Pending()
		nb, _, _ := b.Pending()
		return na+nb == 100
	})
	na, _, _ := a.Pending()
	nb, _, _ := b.Pending()
	if na == 0 || nb == 0 {
		t.Fatalf("queue delivery went to one member only: %d %d", na, nb)
	}
}

// A flow-controlled consumer stops once half its window (1 MiB at first)
// is out and a flow control request is unanswered, reports the stall in
// its heartbeats, and goes on when the client answers.
func TestConsumerPushFlowControlStalls(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	consumerStream(t, js, jetstream.MemoryStorage, 0)
	payload := make([]byte, 64*1024)
	for i := 0; i < 64; i++ { // 4 MiB
		if _, err := js.Publish(ctx(t), "s.x", payload); err != nil {
			t.Fatal(err)
		}
	}
	sub, _ := nc.SubscribeSync("fc")
	sub.SetPendingLimits(-1, -1)
	if _, err := legacyJS(t, nc).AddConsumer("S", &nats.ConsumerConfig{Durable: "F", DeliverSubject: "fc",
		AckPolicy: nats.AckNonePolicy, FlowControl: true, Heartbeat: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	var fc *nats.Msg
	data := 0
	for {
		m := nextMsg(t, sub, 2*time.Second)
		switch m.Header.Get("Description") {
		case "FlowControl Request":
			fc = m
		case "":
			data++
		default:
			if fc == nil {
				t.Fatalf("unexpected status %v", m.Header)
			}
			if st := m.Header.Get(JSConsumerStalled); st != fc.Reply {
				t.Fatalf("heartbeat while stalled: %v (fc %s)", m.Header, fc.Reply)
			}
			if data > 40 {
				t.Fatalf("%d messages delivered past an unanswered flow control", data)
			}
			goto stalled
		}
	}
stalled:
	if !strings.HasPrefix(fc.Reply, "$JS.FC.S.F.") || fc.Header.Get("Status") != "100" {
		t.Fatalf("flow control request: %q %v", fc.Reply, fc.Header)
	}
	fc.Respond(nil)
	for data < 64 {
		m := nextMsg(t, sub, 2*time.Second)
		if m.Header.Get("Description") == "FlowControl Request" {
			m.Respond(nil)
		} else if m.Header.Get("Status") == "" {
			data++
		}
	}
}

func TestConsumerPushRateLimitAndReplay(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	consumerStream(t, js, jetstream.MemoryStorage, 0)
	for i := 0; i < 3; i++ {
		js.Publish(ctx(t), "s.x", make([]byte, 100))
		time.Sleep(150 * time.Millisecond) // the gaps replay_policy original reproduces
	}
	ljs := legacyJS(t, nc)
	sub, _ := nc.SubscribeSync("rp")
	start := time.Now()
	if _, err := ljs.AddConsumer("S", &nats.ConsumerConfig{Durable: "R", DeliverSubject: "rp", AckPolicy: nats.AckNonePolicy, ReplayPolicy: nats.ReplayOriginalPolicy}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		nextData(t, sub, 2*time.Second)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Fatalf("replay original delivered 3 messages 150ms apart in %v", d)
	}
	// 8000 bits a second: 1000 bytes, each message ~110 bytes and more.
	sub2, _ := nc.SubscribeSync("rl")
	start = time.Now()
	if _, err := ljs.AddConsumer("S", &nats.ConsumerConfig{Durable: "L", DeliverSubject: "rl", AckPolicy: nats.AckNonePolicy, RateLimit: 8000}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		nextData(t, sub2, 2*time.Second)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("rate limit of 1000 B/s delivered 3 messages of 100+ bytes in %v", d)
	}
}

// deliver_policy last_per_subject delivers the last message of each
// matching subject at creation, then everything new; num_pending counts
// the last ones only, as nats-server does.
func TestConsumerLastPerSubject(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	consumerStream(t, js, jetstream.FileStorage, 0)
	for _, subj := range []string{"s.a", "s.b", "s.b", "s.a", "s.c", "s.b"} { // seqs 1..6
		js.Publish(ctx(t), subj, []byte(subj))
	}
	c, err := js.CreateOrUpdateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "L", AckPolicy: jetstream.AckExplicitPolicy,
		DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy, FilterSubjects: []string{"s.a", "s.b"}})
	if err != nil {
		t.Fatal(err)
	}
	if ci := consumerInfo(t, c); ci.NumPending != 2 || ci.Delivered.Stream != 3 {
		t.Fatalf("fresh: pending %d delivered %+v", ci.NumPending, ci.Delivered)
	}
	js.Publish(ctx(t), "s.a", []byte("new")) // seq 7
	// Every new message counts: both initial ones (4, 6) and 7, as in nats-server.
	if ci := consumerInfo(t, c); ci.NumPending != 3 {
		t.Fatalf("after a new s.a: pending %d", ci.NumPending)
	}
	b, err := c.Fetch(10, jetstream.FetchMaxWait(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	var seqs, pending []uint64
	for m := range b.Messages() {
		md, _ := m.Metadata()
		seqs = append(seqs, md.Sequence.Stream)
		pending = append(pending, md.NumPending)
	}
	if fmt.Sprint(seqs) != "[4 6 7]" || fmt.Sprint(pending) != "[2 1 0]" {
		t.Fatalf("pull last_per_subject delivered %v pending %v, want [4 6 7] [2 1 0]", seqs, pending)
	}
	// Push, unfiltered: 4 (s.a), 5 (s.c), 6 (s.b), 7 (s.a) are the last ones.
	sub, _ := nc.SubscribeSync("lps")
	if _, err := legacyJS(t, nc).AddConsumer("S", &nats.ConsumerConfig{Durable: "PL", DeliverSubject: "lps",
		AckPolicy: nats.AckNonePolicy, DeliverPolicy: nats.DeliverLastPerSubjectPolicy, FilterSubject: "s.>"}); err != nil {
		t.Fatal(err)
	}
	js.Publish(ctx(t), "s.a", []byte("newer")) // seq 8
	seqs = nil
	for len(seqs) < 4 {
		md, _ := nextData(t, sub, 2*time.Second).Metadata()
		seqs = append(seqs, md.Sequence.Stream)
	}
	if fmt.Sprint(seqs) != "[5 6 7 8]" {
		t.Fatalf("push last_per_subject delivered %v, want [5 6 7 8]", seqs)
	}
}

// CONSUMER.CREATE answers with the consumer as created, before it
// delivers anything (nats-server's delivery loop starts after the answer).
func TestConsumerPushCreateAnswersBeforeDelivery(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	consumerStream(t, js, jetstream.MemoryStorage, 1)
	sub, _ := nc.SubscribeSync("dlv")
	ci, err := legacyJS(t, nc).AddConsumer("S", &nats.ConsumerConfig{Durable: "P", DeliverSubject: "dlv", AckPolicy: nats.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	if ci.Delivered.Stream != 0 || ci.NumPending != 1 || !ci.PushBound {
		t.Fatalf("create answer: delivered %+v pending %d bound %v", ci.Delivered, ci.NumPending, ci.PushBound)
	}
	nextData(t, sub, 2*time.Second)
}

// An ephemeral push consumer is deleted once its deliver subject has had
// no interest for its inactive_threshold, whether it never had any or lost
// it; while bound it lives on.
func TestConsumerPushEphemeralInactive(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	consumerStream(t, js, jetstream.MemoryStorage, 1)
	ljs := legacyJS(t, nc)
	gone := func(name string) func() bool {
		return func() bool { _, err := ljs.ConsumerInfo("S", name); return errors.Is(err, nats.ErrConsumerNotFound) }
	}
	ci, err := ljs.AddConsumer("S", &nats.ConsumerConfig{DeliverSubject: "nobody", AckPolicy: nats.AckNonePolicy, InactiveThreshold: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "the unbound ephemeral to go", gone(ci.Name))
	sub, _ := nc.SubscribeSync("bound")
	ci, err = ljs.AddConsumer("S", &nats.ConsumerConfig{DeliverSubject: "bound", AckPolicy: nats.AckNonePolicy, InactiveThreshold: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	nextData(t, sub, 2*time.Second)
	deadline := time.Now().Add(300 * time.Millisecond) // three thresholds, bound all along
	for time.Now().Before(deadline) {
		if gone(ci.Name)() {
			t.Fatal("a bound ephemeral was deleted")
		}
		time.Sleep(20 * time.Millisecond)
	}
	sub.Unsubscribe()
	waitFor(t, 2*time.Second, "the ephemeral that lost interest to go", gone(ci.Name))
}

// A durable push consumer of a file stream resumes after a restart.
func TestConsumerPushRestartResumes(t *testing.T) {
	o := testOptions()
	o.JetStream = true
	o.StoreDir = t.TempDir()
	s := runServer(t, o)
	nc, js := jsClient(t, s)
	consumerStream(t, js, jetstream.FileStorage, 2)
	sub, _ := nc.SubscribeSync("dlv")
	if _, err := legacyJS(t, nc).AddConsumer("S", &nats.ConsumerConfig{Durable: "P", DeliverSubject: "dlv", AckPolicy: nats.AckExplicitPolicy, AckWait: 300 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	nextData(t, sub, 2*time.Second).AckSync()
	nc.Close()
	s.Shutdown()
	s.WaitForShutdown()
	s = runServer(t, o)
	nc, js = jsClient(t, s)
	sub, _ = nc.SubscribeSync("dlv")
	js.Publish(ctx(t), "s.3", []byte("m3"))
	// 3 is new; 2 was delivered before the restart, unacknowledged, and
	// comes back after its ack wait.
	got := map[uint64]uint64{}
	for len(got) < 2 {
		md, _ := nextData(t, sub, 2*time.Second).Metadata()
		got[md.Sequence.Stream] = md.NumDelivered
	}
	if got[2] != 2 || got[3] != 1 {
		t.Fatalf("after restart (stream seq: deliveries): %v", got)
	}
}

// A push consumer without flow control or ack limits decides a bounded
// pass at a time (the rest after those are sent): it never queues the
// whole stream at once.
func TestConsumerPushPassBounded(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	consumerStream(t, js, jetstream.MemoryStorage, 0)
	n := 3 * pushPassMsgs
	for i := 0; i < n; i++ {
		js.PublishAsync("s.x", nil)
	}
	<-js.PublishAsyncComplete()
	ljs := legacyJS(t, nc)
	if _, err := ljs.AddConsumer("S", &nats.ConsumerConfig{Durable: "P", DeliverSubject: "dlv", AckPolicy: nats.AckNonePolicy}); err != nil {
		t.Fatal(err)
	}
	// Unbound: nothing was delivered. Bind it by hand and run one pass.
	mset := s.js.Load().account("$G").lookup("S")
	mset.mu.Lock()
	o := mset.consumers["P"]
	o.push.active = true
	sends := o.pumpLocked(nil)
	o.push.active = false
	mset.mu.Unlock()
	if len(sends) != pushPassMsgs {
		t.Fatalf("one pass decided %d messages, want %d", len(sends), pushPassMsgs)
	}
	// Bound for real, every message arrives, pass after pass.
	sub, _ := nc.SubscribeSync("dlv")
	sub.SetPendingLimits(-1, -1)
	waitFor(t, 5*time.Second, "every message", func() bool { m, _, _ := sub.Pending(); return m == n-pushPassMsgs })
}

// nats.go's legacy subscriptions on push consumers: a durable with manual
// acks, and a queue subscription (deliver_group) whose members share the
// messages.
func TestConsumerPushLegacySubscribe(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	consumerStream(t, js, jetstream.FileStorage, 4)
	ljs := legacyJS(t, nc)
	sub, err := ljs.SubscribeSync("s.>", nats.Durable("D"), nats.ManualAck(), nats.AckExplicit())
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 4; i++ {
		m := nextData(t, sub, 2*time.Second)
		if string(m.Data) != fmt.Sprintf("m%d", i) {
			t.Fatalf("durable %d: %q", i, m.Data)
		}
		m.AckSync()
	}
	if ci, _ := sub.ConsumerInfo(); ci.AckFloor.Stream != 4 || !ci.PushBound {
		t.Fatalf("durable info: %+v", ci)
	}
	var mu sync.Mutex
	got := map[string]int{}
	for _, member := range []string{"a", "b"} {
		if _, err := ljs.QueueSubscribe("s.>", "Q", func(m *nats.Msg) {
			mu.Lock()
			got[string(m.Data)]++
			mu.Unlock()
			m.Ack()
		}, nats.Durable("Q"), nats.ManualAck()); err != nil {
			t.Fatalf("queue member %s: %v", member, err)
		}
	}
	for i := 5; i <= 40; i++ {
		js.Publish(ctx(t), "s.x", []byte(fmt.Sprintf("m%d", i)))
	}
	waitFor(t, 5*time.Second, "40 messages to the group", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 40 })
	mu.Lock()
	defer mu.Unlock()
	for k, n := range got {
		if n != 1 {
			t.Fatalf("%s delivered %d times to the group", k, n)
		}
	}
}
