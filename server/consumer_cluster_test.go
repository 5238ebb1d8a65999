package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ccSetup runs a 3-server cluster with an R3 stream of n messages on
// cc.<i> and returns a client connected to a server that does not lead it.
func ccSetup(t *testing.T, n int) (*jsTestCluster, *nats.Conn, jetstream.JetStream, string) {
	t.Helper()
	c := runJSCluster(t, 3)
	_, js0 := jsClient(t, c.servers[0])
	st := createStream(t, js0, jetstream.StreamConfig{Name: "CC", Subjects: []string{"cc.>"}, Replicas: 3})
	leader := st.CachedInfo().Cluster.Leader
	via := c.servers[0]
	for _, s := range c.servers {
		if s.Name() != leader {
			via = s
		}
	}
	nc, js := jsClient(t, via)
	for i := 1; i <= n; i++ {
		if _, err := js.Publish(ctx(t), fmt.Sprintf("cc.%d", i), []byte("m")); err != nil {
			t.Fatal(err)
		}
	}
	return c, nc, js, leader
}

// ccInfo asks for CONSUMER.INFO, retrying while the stream has no leader.
func ccInfo(t *testing.T, js jetstream.JetStream, name string) *jetstream.ConsumerInfo {
	t.Helper()
	var last error
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		cons, err := js.Consumer(ctx(t), "CC", name)
		if err == nil {
			return cons.CachedInfo()
		}
		last = err
	}
	t.Fatalf("consumer info: %v", last)
	return nil
}

// ccNumbers are the numbers CONSUMER.INFO must agree on across leaders.
func ccNumbers(ci *jetstream.ConsumerInfo) string {
	return fmt.Sprintf("delivered %d/%d ack_floor %d/%d ack_pending %d pending %d redelivered %d",
		ci.Delivered.Consumer, ci.Delivered.Stream, ci.AckFloor.Consumer, ci.AckFloor.Stream,
		ci.NumAckPending, ci.NumPending, ci.NumRedelivered)
}

// checkConsumersAgree waits until every replica of the stream applied the
// same index and their consumers' digests are equal.
func checkConsumersAgree(t *testing.T, c *jsTestCluster, stream string) {
	t.Helper()
	var desc []string
	waitFor(t, 15*time.Second, "replicas' consumers agree", func() bool {
		desc = desc[:0]
		reps := c.replicas(stream)
		ok := len(reps) == 3
		var d0, i0 uint64
		for i, m := range reps {
			m.mu.Lock()
			d, idx, n := m.consumersDigestLocked(), m.lastIndex, len(m.consumers)
			m.mu.Unlock()
			desc = append(desc, fmt.Sprintf("%s: index %d consumers %d digest %x", m.jsa.js.srv.Name(), idx, n, d))
			if i == 0 {
				d0, i0 = d, idx
			}
			ok = ok && d == d0 && idx == i0 && n > 0
		}
		return ok
	})
	t.Logf("%s", strings.Join(desc, "; "))
}

func TestJetStreamClusterConsumerPullAcrossStepdown(t *testing.T) {
	c, nc, js, leader := ccSetup(t, 20)
	cons, err := js.CreateOrUpdateConsumer(ctx(t), "CC", jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(10, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var got []jetstream.Msg
	for m := range batch.Messages() {
		got = append(got, m)
	}
	if len(got) != 10 || batch.Error() != nil {
		t.Fatalf("fetched %d messages (%v)", len(got), batch.Error())
	}
	for i, m := range got {
		if want := fmt.Sprintf("cc.%d", i+1); m.Subject() != want {
			t.Fatalf("message %d has subject %q, want %q", i, m.Subject(), want)
		}
	}
	for _, m := range got[:5] {
		if err := m.Ack(); err != nil {
			t.Fatal(err)
		}
	}
	if err := got[5].DoubleAck(ctx(t)); err != nil { // AckSync: answered once applied
		t.Fatal(err)
	}
	if cl := ccInfo(t, js, "D").Cluster; cl == nil || cl.Leader != leader || len(cl.Replicas) != 2 {
		t.Fatalf("cluster section %+v, want leader %s and two replicas", cl, leader)
	}
	before := ccNumbers(ccInfo(t, js, "D"))
	if want := "delivered 10/10 ack_floor 6/6 ack_pending 4 pending 10 redelivered 0"; before != want {
		t.Fatalf("before the stepdown: %s, want %s", before, want)
	}
	checkConsumersAgree(t, c, "CC")

	stepdownStream(t, nc, "CC")
	awaitNewLeader(t, c, nc, "CC", leader)
	if after := ccNumbers(ccInfo(t, js, "D")); after != before {
		t.Fatalf("after the stepdown: %s, before %s", after, before)
	}

	// The rest, acked; then nothing acknowledged comes back from a new leader.
	for _, m := range got[6:] {
		if err := m.DoubleAck(ctx(t)); err != nil {
			t.Fatal(err)
		}
	}
	batch, err = cons.Fetch(10, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for m := range batch.Messages() {
		n++
		if want := fmt.Sprintf("cc.%d", 10+n); m.Subject() != want {
			t.Fatalf("got %q, want %q", m.Subject(), want)
		}
		if err := m.DoubleAck(ctx(t)); err != nil {
			t.Fatal(err)
		}
	}
	if n != 10 {
		t.Fatalf("second fetch got %d messages (%v)", n, batch.Error())
	}
	leader2, _ := infoOutcome(t, nc, "CC")
	stepdownStream(t, nc, "CC")
	awaitNewLeader(t, c, nc, "CC", leader2)
	ci := ccInfo(t, js, "D")
	if got, want := ccNumbers(ci), "delivered 20/20 ack_floor 20/20 ack_pending 0 pending 0 redelivered 0"; got != want {
		t.Fatalf("after acking everything and a stepdown: %s, want %s", got, want)
	}
	batch, err = cons.FetchNoWait(5)
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		t.Fatalf("an acknowledged message came back: %s", m.Subject())
	}
	checkConsumersAgree(t, c, "CC")
}

func TestJetStreamClusterConsumerCreateInfoDelete(t *testing.T) {
	c, nc, js, leader := ccSetup(t, 3)
	if _, err := js.CreateOrUpdateConsumer(ctx(t), "CC", jetstream.ConsumerConfig{Durable: "A", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	// The same config again is a success; another one for a create is not.
	if _, err := js.CreateConsumer(ctx(t), "CC", jetstream.ConsumerConfig{Durable: "A", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateConsumer(ctx(t), "CC", jetstream.ConsumerConfig{Durable: "A", AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 3}); !errors.Is(err, jetstream.ErrConsumerExists) {
		t.Fatalf("create with another config: %v", err)
	}
	upd, err := js.UpdateConsumer(ctx(t), "CC", jetstream.ConsumerConfig{Durable: "A", AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 3})
	if err != nil || upd.CachedInfo().Config.MaxDeliver != 3 {
		t.Fatalf("update: %v", err)
	}
	eph, err := js.CreateOrUpdateConsumer(ctx(t), "CC", jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	if got := ccInfo(t, js, "A").NumPending; got != 3 {
		t.Fatalf("num_pending %d", got)
	}
	var names []string
	stream, err := js.Stream(ctx(t), "CC")
	if err != nil {
		t.Fatal(err)
	}
	lister := stream.ConsumerNames(ctx(t))
	for n := range lister.Name() {
		names = append(names, n)
	}
	if len(names) != 2 || lister.Err() != nil {
		t.Fatalf("names %v (%v)", names, lister.Err())
	}
	checkConsumersAgree(t, c, "CC")
	// A consumer's stepdown is its stream's.
	resp, err := nc.Request("$JS.API.CONSUMER.LEADER.STEPDOWN.CC.A", nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(resp.Data), `"success":true`) || !strings.Contains(string(resp.Data), "consumer_leader_stepdown_response") {
		t.Fatalf("consumer stepdown: %s", resp.Data)
	}
	awaitNewLeader(t, c, nc, "CC", leader)
	if err := js.DeleteConsumer(ctx(t), "CC", eph.CachedInfo().Name); err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteConsumer(ctx(t), "CC", "nope"); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Fatalf("delete of a missing consumer: %v", err)
	}
	waitFor(t, 5*time.Second, "the delete applied everywhere", func() bool {
		for _, m := range c.replicas("CC") {
			if m.numConsumers() != 1 {
				return false
			}
		}
		return true
	})
	checkConsumersAgree(t, c, "CC")
}

// The leader is killed while a client consumes: the new leader continues
// from the applied state and every message is processed. (A message may
// come twice: one that waited in the client's buffer past its ack wait
// while the client was retrying an ack the dead leader did not answer.) At the end nothing is
// pending on any live replica, so nothing acknowledged can come back, and
// the replicas' consumer states are equal.
func TestJetStreamClusterConsumerLeaderKilledMidConsume(t *testing.T) {
	const total = 200
	c, _, js, leader := ccSetup(t, total)
	cons, err := js.CreateOrUpdateConsumer(ctx(t), "CC", jetstream.ConsumerConfig{Durable: "K", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	acked := map[string]bool{}
	dups := 0
	killed := make(chan struct{})
	var once sync.Once
	cc, err := cons.Consume(func(m jetstream.Msg) {
		// An AckSync the dead leader did not answer may have been applied:
		// retried, the new leader answers it (acked or not, it is now).
		for try := 0; ; try++ {
			actx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			err := m.DoubleAck(actx)
			cancel()
			if err == nil {
				break
			}
			if try == 10 {
				return
			}
		}
		mu.Lock()
		if acked[m.Subject()] {
			dups++
		}
		acked[m.Subject()] = true
		n := len(acked)
		mu.Unlock()
		if n == total/4 {
			once.Do(func() { close(killed) })
		}
	}, jetstream.PullMaxMessages(10), jetstream.PullExpiry(2*time.Second), jetstream.PullHeartbeat(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Stop()
	select {
	case <-killed:
	case <-time.After(20 * time.Second):
		t.Fatal("consuming did not start")
	}
	c.serverNamed(leader).Shutdown()
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n == total {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d acknowledged; %s", n, total, ccDump(c, "CC", "K"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	cc.Stop()
	mu.Lock()
	t.Logf("%d messages acknowledged twice", dups)
	mu.Unlock()
	ci := ccInfo(t, js, "K")
	if ci.AckFloor.Stream != total || ci.NumAckPending != 0 || ci.NumPending != 0 {
		t.Fatalf("after consuming everything: %s", ccNumbers(ci))
	}
	waitFor(t, 15*time.Second, "the live replicas agree, nothing pending", func() bool {
		var d, idx []uint64
		for _, s := range c.servers {
			js := s.js.Load()
			if !s.Running() || js == nil || js.account(globalAccountName) == nil {
				continue
			}
			m := js.account(globalAccountName).lookup("CC")
			if m == nil {
				return false
			}
			m.mu.Lock()
			o := m.consumers["K"]
			if o == nil || o.state.NumAckPending() != 0 || o.state.AckFloor().Stream != total {
				m.mu.Unlock()
				return false
			}
			d, idx = append(d, m.consumersDigestLocked()), append(idx, m.lastIndex)
			m.mu.Unlock()
		}
		return len(d) == 2 && d[0] == d[1] && idx[0] == idx[1]
	})
}

// ccDump describes a consumer on every live replica, for failures.
func ccDump(c *jsTestCluster, stream, name string) string {
	var out []string
	for _, s := range c.servers {
		js := s.js.Load()
		if !s.Running() || js == nil || js.account(globalAccountName) == nil {
			continue
		}
		m := js.account(globalAccountName).lookup(stream)
		if m == nil {
			continue
		}
		m.mu.Lock()
		d := fmt.Sprintf("%s: leader %v index %d", s.Name(), m.leader, m.lastIndex)
		if o := m.consumers[name]; o != nil {
			d += fmt.Sprintf(" delivered %+v floor %+v ack_pending %d waiting %d rdq %v ackAt %d",
				o.state.Delivered(), o.state.AckFloor(), o.state.NumAckPending(), len(o.waiting), o.rdq, o.ackAt)
			for _, wr := range o.waiting {
				d += fmt.Sprintf(" [wr n %d reserved %d]", wr.n, wr.reserved)
			}
			if l := o.lead; l != nil {
				d += fmt.Sprintf(" inflight %d firsts %d cursor %d redeliv %d", len(l.inflight), l.firsts, l.cursor, len(l.redeliv))
			}
		}
		m.mu.Unlock()
		out = append(out, d)
	}
	return strings.Join(out, "\n")
}

// Redeliveries go through the log too: an ack wait that passes (the
// leader's timer proposes OpRedeliverDue), a nak, and max_deliver.
func TestJetStreamClusterConsumerRedelivery(t *testing.T) {
	c, _, js, _ := ccSetup(t, 2)
	cons, err := js.CreateOrUpdateConsumer(ctx(t), "CC", jetstream.ConsumerConfig{Durable: "R", AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: 300 * time.Millisecond, MaxDeliver: 2})
	if err != nil {
		t.Fatal(err)
	}
	fetch1 := func() jetstream.Msg {
		t.Helper()
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			return m
		}
		t.Fatalf("nothing fetched (%v)", batch.Error())
		return nil
	}
	batch, err := cons.Fetch(2, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var got []jetstream.Msg
	for m := range batch.Messages() {
		got = append(got, m)
	}
	if len(got) != 2 {
		t.Fatalf("fetched %d (%v)", len(got), batch.Error())
	}
	if err := got[1].DoubleAck(ctx(t)); err != nil {
		t.Fatal(err)
	}
	again := fetch1() // cc.1 was not acked: back after the ack wait
	md, _ := again.Metadata()
	if again.Subject() != "cc.1" || md.NumDelivered != 2 {
		t.Fatalf("got %s delivered %d times, want cc.1 again", again.Subject(), md.NumDelivered)
	}
	// That was its last delivery (max_deliver 2); a nak redelivers cc.3 at once.
	if _, err := js.Publish(ctx(t), "cc.3", nil); err != nil {
		t.Fatal(err)
	}
	third := fetch1()
	if third.Subject() != "cc.3" {
		t.Fatalf("got %s, want cc.3", third.Subject())
	}
	if err := third.Nak(); err != nil {
		t.Fatal(err)
	}
	nakd := fetch1()
	if md, _ := nakd.Metadata(); nakd.Subject() != "cc.3" || md.NumDelivered != 2 {
		t.Fatalf("after a nak got %s (%d deliveries)", nakd.Subject(), md.NumDelivered)
	}
	if err := nakd.DoubleAck(ctx(t)); err != nil {
		t.Fatal(err)
	}
	// cc.1 leaves pending when its last ack wait passes (OpRedeliverDue retires it).
	want := "delivered 5/3 ack_floor 5/3 ack_pending 0 pending 0 redelivered 1"
	deadline := time.Now().Add(10 * time.Second)
	for n := ccNumbers(ccInfo(t, js, "R")); n != want; n = ccNumbers(ccInfo(t, js, "R")) {
		if time.Now().After(deadline) {
			t.Fatalf("%s, want %s", n, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	checkConsumersAgree(t, c, "CC")
}

// A request for more than one Deliver entry holds is served by several,
// pipelined, in stream order; max_bytes stops a request at its limit.
func TestJetStreamClusterConsumerLargeFetch(t *testing.T) {
	const total = 600
	c, _, js, _ := ccSetup(t, total)
	cons, err := js.CreateOrUpdateConsumer(ctx(t), "CC", jetstream.ConsumerConfig{Durable: "L", AckPolicy: jetstream.AckAllPolicy})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(total, jetstream.FetchMaxWait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	var last jetstream.Msg
	for m := range batch.Messages() {
		n++
		if want := fmt.Sprintf("cc.%d", n); m.Subject() != want {
			t.Fatalf("message %d is %s", n, m.Subject())
		}
		last = m
	}
	if n != total {
		t.Fatalf("fetched %d of %d (%v)", n, total, batch.Error())
	}
	if err := last.DoubleAck(ctx(t)); err != nil { // ack policy all: everything
		t.Fatal(err)
	}
	if got, want := ccNumbers(ccInfo(t, js, "L")), fmt.Sprintf("delivered %d/%d ack_floor %d/%d ack_pending 0 pending 0 redelivered 0", total, total, total, total); got != want {
		t.Fatalf("%s, want %s", got, want)
	}
	checkConsumersAgree(t, c, "CC")
}

// max_bytes: a replicated stream's consumer stops a request where a
// stream on one server does.
func TestJetStreamClusterConsumerMaxBytesAsOneServer(t *testing.T) {
	fetched := func(js jetstream.JetStream, stream string) []string {
		t.Helper()
		for i := 1; i <= 10; i++ {
			if _, err := js.Publish(ctx(t), fmt.Sprintf("%s.%d", strings.ToLower(stream), i), make([]byte, 100)); err != nil {
				t.Fatal(err)
			}
		}
		cons, err := js.CreateOrUpdateConsumer(ctx(t), stream, jetstream.ConsumerConfig{Durable: "B", AckPolicy: jetstream.AckExplicitPolicy})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, max := range []int{450, 90, 1000} {
			batch, err := cons.FetchBytes(max, jetstream.FetchMaxWait(2*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for range batch.Messages() {
				n++
			}
			out = append(out, fmt.Sprintf("%d: %d msgs (%v)", max, n, batch.Error()))
		}
		return out
	}
	_, js1 := jsClient(t, runJSServer(t))
	createStream(t, js1, jetstream.StreamConfig{Name: "CC", Subjects: []string{"cc.>"}})
	one := fetched(js1, "CC")
	_, _, js3, _ := ccSetup(t, 0)
	three := fetched(js3, "CC")
	if fmt.Sprint(one) != fmt.Sprint(three) {
		t.Fatalf("one server: %v\nR3: %v", one, three)
	}
	t.Logf("%v", one)
}

// An R1 stream in a cluster has a raft group of one: its consumers go
// through its log the same way, asked through any server.
func TestJetStreamClusterConsumerR1InCluster(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js0 := jsClient(t, c.servers[0])
	st := createStream(t, js0, jetstream.StreamConfig{Name: "ONE", Subjects: []string{"one.>"}, Replicas: 1})
	leader := st.CachedInfo().Cluster.Leader
	for _, s := range c.servers {
		if s.Name() == leader {
			continue
		}
		_, js := jsClient(t, s) // a server without the stream
		if _, err := js.Publish(ctx(t), "one.a", []byte(s.Name())); err != nil {
			t.Fatal(err)
		}
		cons, err := js.CreateOrUpdateConsumer(ctx(t), "ONE", jetstream.ConsumerConfig{Durable: "C", AckPolicy: jetstream.AckExplicitPolicy})
		if err != nil {
			t.Fatal(err)
		}
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			if m.Subject() != "one.a" || string(m.Data()) != s.Name() {
				t.Fatalf("got %s %q", m.Subject(), m.Data())
			}
			if err := m.DoubleAck(ctx(t)); err != nil {
				t.Fatal(err)
			}
		}
		ci, err := cons.Info(ctx(t))
		if err != nil || ci.NumAckPending != 0 || ci.AckFloor.Stream != ci.Delivered.Stream || ci.Delivered.Stream == 0 {
			t.Fatalf("info %+v %v", ci, err)
		}
	}
}
