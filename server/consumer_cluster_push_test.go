package server

import (
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// pushSeen counts the deliveries of each stream sequence.
type pushSeen struct {
	mu sync.Mutex
	n  map[uint64]int
}

func (p *pushSeen) add(seq uint64) {
	p.mu.Lock()
	p.n[seq]++
	p.mu.Unlock()
}

func (p *pushSeen) get(seq uint64) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n[seq]
}

// A durable push consumer with explicit acks on an R3 stream, its client
// on a server that does not lead the stream (push_bound through a route):
// acked before a stepdown, nothing comes back from the new leader; what
// was not acked is redelivered; new messages go on.
func TestJetStreamClusterPushDurableAcrossStepdown(t *testing.T) {
	c, nc, js, leader := ccSetup(t, 20)
	cons, err := js.CreateOrUpdatePushConsumer(ctx(t), "CC", jetstream.ConsumerConfig{Durable: "P", DeliverSubject: "push.P",
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: 2 * time.Second, FlowControl: true, IdleHeartbeat: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	seen := &pushSeen{n: map[uint64]int{}}
	ack := func(m jetstream.Msg) bool { // the first ten and the new ones are acked
		md, err := m.Metadata()
		if err != nil {
			return false
		}
		seen.add(md.Sequence.Stream)
		s := md.Sequence.Stream
		return s <= 10 || s > 20 || md.NumDelivered > 1
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		if ack(m) {
			_ = m.DoubleAck(ctx(t))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Stop()
	waitFor(t, 10*time.Second, "20 delivered", func() bool { return seen.get(20) == 1 })
	if ci := pushInfo(t, js, "P"); !ci.PushBound {
		t.Fatalf("push_bound false with a subscriber across a route: %+v", ci)
	}
	waitFor(t, 10*time.Second, "first ten acked", func() bool { return pushInfo(t, js, "P").AckFloor.Stream >= 10 })
	checkConsumersAgree(t, c, "CC")
	stepdownStream(t, nc, "CC")
	awaitNewLeader(t, c, nc, "CC", leader)
	ccPublish(t, js, 21, 30)
	waitFor(t, 20*time.Second, "all acked", func() bool {
		ci := pushInfo(t, js, "P")
		return ci.AckFloor.Stream == 30 && ci.NumAckPending == 0
	})
	for seq := uint64(1); seq <= 30; seq++ {
		n := seen.get(seq)
		if (seq <= 10 || seq > 20) && n != 1 {
			t.Fatalf("stream seq %d delivered %d times (acked ones must not come back)", seq, n)
		}
		if seq > 10 && seq <= 20 && n < 2 {
			t.Fatalf("unacked stream seq %d delivered %d times, want a redelivery", seq, n)
		}
	}
	checkConsumersAgree(t, c, "CC")
}

// push_bound follows a subscriber on a server that does not lead the
// stream: it comes with the route's RS+ and goes with its RS-.
func TestJetStreamClusterPushBoundAcrossRoute(t *testing.T) {
	_, nc, js, _ := ccSetup(t, 1)
	if _, err := js.CreateOrUpdatePushConsumer(ctx(t), "CC", jetstream.ConsumerConfig{Durable: "Q", DeliverSubject: "push.Q",
		AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	if pushInfo(t, js, "Q").PushBound {
		t.Fatal("bound without a subscriber")
	}
	sub, err := nc.SubscribeSync("push.Q")
	if err != nil {
		t.Fatal(err)
	}
	if m, err := sub.NextMsg(5 * time.Second); err != nil || m.Subject != "cc.1" {
		t.Fatalf("got %v %v, want cc.1", m, err)
	}
	if !pushInfo(t, js, "Q").PushBound {
		t.Fatal("not bound with a subscriber across a route")
	}
	if err := sub.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "push_bound false", func() bool { return !pushInfo(t, js, "Q").PushBound })
}

// pushInfo is ccInfo for a push consumer.
func pushInfo(t *testing.T, js jetstream.JetStream, name string) *jetstream.ConsumerInfo {
	t.Helper()
	var last error
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		cons, err := js.PushConsumer(ctx(t), "CC", name)
		if err == nil {
			return cons.CachedInfo()
		}
		last = err
	}
	t.Fatalf("consumer info: %v", last)
	return nil
}
