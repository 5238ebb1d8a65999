package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// pushSeen counts the deliveries of each stream sequence and remembers
// the ones whose AckSync was answered.
type pushSeen struct {
	mu    sync.Mutex
	n     map[uint64]int
	acked map[uint64]bool
	bad   []string
}

func (p *pushSeen) add(seq uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n[seq]++
	if p.acked[seq] {
		p.bad = append(p.bad, fmt.Sprintf("stream seq %d came back after its AckSync was answered", seq))
	}
}

func (p *pushSeen) ack(seq uint64) {
	p.mu.Lock()
	p.acked[seq] = true
	p.mu.Unlock()
}

func (p *pushSeen) get(seq uint64) (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n[seq], p.acked[seq]
}

func (p *pushSeen) check(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.bad) > 0 {
		t.Fatal(strings.Join(p.bad, "; "))
	}
}

// A durable push consumer with explicit acks on an R3 stream, its client
// on a server that does not lead the stream (push_bound through a route):
// a message whose AckSync was answered never comes back, before or after
// a stepdown; what was not acked is redelivered by the new leader; new
// messages go on.
func TestJetStreamClusterPushDurableAcrossStepdown(t *testing.T) {
	c, nc, js, leader := ccSetup(t, 20)
	cons, err := js.CreateOrUpdatePushConsumer(ctx(t), "CC", jetstream.ConsumerConfig{Durable: "P", DeliverSubject: "push.P",
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: 2 * time.Second, FlowControl: true, IdleHeartbeat: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	seen := &pushSeen{n: map[uint64]int{}, acked: map[uint64]bool{}}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		md, err := m.Metadata()
		if err != nil {
			return
		}
		s := md.Sequence.Stream
		seen.add(s)
		if s > 10 && s <= 20 && md.NumDelivered == 1 {
			return // 11..20 wait for a redelivery
		}
		actx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if m.DoubleAck(actx) == nil {
			seen.ack(s)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Stop()
	waitFor(t, 10*time.Second, "20 delivered", func() bool { n, _ := seen.get(20); return n >= 1 })
	if ci := pushInfo(t, js, "P"); !ci.PushBound {
		t.Fatalf("push_bound false with a subscriber across a route: %+v", ci)
	}
	waitFor(t, 10*time.Second, "first ten acked", func() bool { return pushInfo(t, js, "P").AckFloor.Stream >= 10 })
	checkConsumersAgree(t, c, "CC")
	stepdownStream(t, nc, "CC")
	awaitNewLeader(t, c, nc, "CC", leader)
	ccPublish(t, js, 21, 30)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ci := pushInfo(t, js, "P")
		if ci.AckFloor.Stream >= 30 && ci.NumAckPending == 0 && ci.NumPending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not all acked: %s; %s", ccNumbers(ci), pushDump(c, "P"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st, err := js.Stream(ctx(t), "CC"); err == nil && st.CachedInfo().State.LastSeq != 30 {
		t.Logf("STREAMLAST %d msgs %d", st.CachedInfo().State.LastSeq, st.CachedInfo().State.Msgs)
	}
	seen.check(t)
	for seq := uint64(11); seq <= 20; seq++ {
		if n, _ := seen.get(seq); n < 2 {
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

// pushDump describes the push consumer's soft state on each replica.
func pushDump(c *jsTestCluster, name string) string {
	var out []string
	for _, m := range c.replicas("CC") {
		m.mu.Lock()
		if o := m.consumers[name]; o != nil && o.push != nil {
			p := o.push
			d := fmt.Sprintf("%s leader=%v active=%v waiting=%v pbytes=%d maxpb=%d fcid=%q rdq=%v ackAt=%d",
				m.jsa.js.srv.Name(), m.leader, p.active, p.waiting, p.pbytes, p.maxpb, p.fcid, o.rdq, o.ackAt)
			if o.lead != nil {
				d += fmt.Sprintf(" inflight=%d firsts=%d cursor=%d redeliv=%d", len(o.lead.inflight), o.lead.firsts, o.lead.cursor, len(o.lead.redeliv))
			}
			out = append(out, d)
		}
		m.mu.Unlock()
	}
	return strings.Join(out, " | ")
}
