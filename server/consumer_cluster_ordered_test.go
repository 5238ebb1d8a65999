package server

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// orderedSeen collects the stream sequences an ordered consumer delivered.
type orderedSeen struct {
	mu   sync.Mutex
	seqs []uint64
}

func (o *orderedSeen) add(seq uint64) {
	o.mu.Lock()
	o.seqs = append(o.seqs, seq)
	o.mu.Unlock()
}

func (o *orderedSeen) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.seqs)
}

// check: exactly 1..n, in order.
func (o *orderedSeen) check(t *testing.T, n int) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, seq := range o.seqs {
		if seq != uint64(i+1) {
			t.Fatalf("delivery %d is stream seq %d (loss or duplicate)", i, seq)
		}
	}
	if len(o.seqs) != n {
		t.Fatalf("got %d deliveries, want %d", len(o.seqs), n)
	}
}

func ccPublish(t *testing.T, js jetstream.JetStream, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		if _, err := js.Publish(ctx(t), fmt.Sprintf("cc.%d", i), []byte("m")); err != nil {
			t.Fatal(err)
		}
	}
}

// An ordered consumer (ephemeral AckNone: local to the stream's leader)
// outlives a stepdown of the stream's leader: nats.go recreates it from the
// next sequence it expects; nothing is lost or delivered twice.
func TestJetStreamClusterOrderedConsumerAcrossStepdown(t *testing.T) {
	c, nc, js, leader := ccSetup(t, 50)
	cons, err := js.OrderedConsumer(ctx(t), "CC", jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var seen orderedSeen
	cc, err := cons.Consume(func(m jetstream.Msg) {
		md, err := m.Metadata()
		if err == nil {
			seen.add(md.Sequence.Stream)
		}
	}, jetstream.PullHeartbeat(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Stop()
	stepdownMidOrdered(t, c, nc, js, leader, &seen)
}

// The legacy push ordered consumer (what KV watch and object get use).
func TestJetStreamClusterOrderedPushAcrossStepdown(t *testing.T) {
	c, nc, js, leader := ccSetup(t, 50)
	ljs, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	var seen orderedSeen
	sub, err := ljs.Subscribe("cc.>", func(m *nats.Msg) {
		if md, err := m.Metadata(); err == nil {
			seen.add(md.Sequence.Stream)
		}
	}, nats.OrderedConsumer(), nats.IdleHeartbeat(500*time.Millisecond), nats.BindStream("CC"))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	stepdownMidOrdered(t, c, nc, js, leader, &seen)
}

// stepdownMidOrdered has CC's leader step down once an ordered consumer
// saw the first 50 messages, publishes 50 more, and checks that it sees
// all 100 in order.
func stepdownMidOrdered(t *testing.T, c *jsTestCluster, nc *nats.Conn, js jetstream.JetStream, leader string, seen *orderedSeen) {
	t.Helper()
	waitFor(t, 10*time.Second, "first 50", func() bool { return seen.count() >= 50 })
	stepdownStream(t, nc, "CC")
	awaitNewLeader(t, c, nc, "CC", leader)
	ccPublish(t, js, 51, 100)
	waitFor(t, 20*time.Second, "all 100", func() bool { return seen.count() >= 100 })
	seen.check(t, 100)
}

// A pull request for a consumer that does not exist is answered 503, as
// nats-server's (nobody listens on its subject there), also through a
// server that does not lead the stream.
func TestJetStreamClusterPullUnknownConsumerNoResponders(t *testing.T) {
	_, nc, _, _ := ccSetup(t, 1)
	msg, err := nc.Request(jsAPIPrefix+"CONSUMER.MSG.NEXT.CC.NOPE", []byte(`{"batch":1}`), 5*time.Second)
	if err != nats.ErrNoResponders {
		t.Fatalf("got %v %+v, want no responders", err, msg)
	}
}

// CONSUMER.CREATE on a replicated stream answers with the cluster section
// INFO has, for a consumer through the log and for a local one.
func TestJetStreamClusterConsumerCreateHasCluster(t *testing.T) {
	_, nc, _, leader := ccSetup(t, 1)
	for _, body := range []string{
		`{"stream_name":"CC","config":{"durable_name":"D","ack_policy":"explicit"}}`,
		`{"stream_name":"CC","config":{"ack_policy":"none","num_replicas":1,"mem_storage":true}}`,
	} {
		subj := jsAPIPrefix + "CONSUMER.CREATE.CC"
		if strings.Contains(body, "durable_name") {
			subj = jsAPIPrefix + "CONSUMER.DURABLE.CREATE.CC.D"
		}
		msg, err := nc.Request(subj, []byte(body), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(msg.Data), `"cluster":{`) || !strings.Contains(string(msg.Data), strconv.Quote(leader)) {
			t.Fatalf("no cluster section led by %s: %s", leader, msg.Data)
		}
	}
}
