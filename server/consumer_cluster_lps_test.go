package server

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// lpsReplicas reports each replica's list and num_pending of consumer name.
func lpsReplicas(c *jsTestCluster, name string) []string {
	var out []string
	for _, m := range c.replicas("CC") {
		m.mu.Lock()
		if o := m.consumers[name]; o != nil {
			out = append(out, fmt.Sprintf("lss %v pending %d", o.lss, o.numPendingLocked()))
		}
		m.mu.Unlock()
	}
	return out
}

// A durable last_per_subject consumer of an R3 stream delivers the last
// message of each subject as the stream held them at its Create, then
// what comes; every replica holds the same list and counts the same
// num_pending, also after a stepdown.
func TestJetStreamClusterLastPerSubjectDurable(t *testing.T) {
	c, nc, js, leader := ccSetup(t, 0)
	for _, s := range []string{"a", "b", "c", "a", "b", "a"} { // lasts: c 3, b 5, a 6 (4 is not one)
		if _, err := js.Publish(ctx(t), "cc."+s, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := js.CreateOrUpdateConsumer(ctx(t), "CC", jetstream.ConsumerConfig{Durable: "L",
		DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy, AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: "cc.>"})
	if err != nil {
		t.Fatal(err)
	}
	if n := cons.CachedInfo().NumPending; n != 3 {
		t.Fatalf("num_pending %d at creation, want 3", n)
	}
	waitFor(t, 10*time.Second, "replicas hold the same list", func() bool {
		r := lpsReplicas(c, "L")
		return len(r) == 3 && r[0] == r[1] && r[1] == r[2] && r[0] == "lss [3 5 6] pending 3"
	})
	fetch := func(n int) []uint64 {
		t.Helper()
		b, err := cons.Fetch(n, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		var seqs []uint64
		for m := range b.Messages() {
			md, _ := m.Metadata()
			seqs = append(seqs, md.Sequence.Stream)
			if err := m.DoubleAck(ctx(t)); err != nil {
				t.Fatal(err)
			}
		}
		return seqs
	}
	if got := fetch(1); !slices.Equal(got, []uint64{3}) {
		t.Fatalf("first fetch %v, want [3]", got)
	}
	stepdownStream(t, nc, "CC")
	awaitNewLeader(t, c, nc, "CC", leader)
	if n := ccInfo(t, js, "L").NumPending; n != 2 {
		t.Fatalf("num_pending %d after a stepdown, want 2", n)
	}
	if _, err := js.Publish(ctx(t), "cc.a", []byte("a")); err != nil { // 7
		t.Fatal(err)
	}
	if got := fetch(10); !slices.Equal(got, []uint64{5, 6, 7}) {
		t.Fatalf("then %v, want [5 6 7]", got)
	}
	waitFor(t, 10*time.Second, "replicas agree at the end", func() bool {
		r := lpsReplicas(c, "L")
		return len(r) == 3 && strings.Join(r, ",") == strings.Repeat("lss [] pending 0,", 2)+"lss [] pending 0"
	})
	checkConsumersAgree(t, c, "CC")
}

// The same through a durable push consumer: the last of each subject, then
// the new ones, nothing else.
func TestJetStreamClusterLastPerSubjectPush(t *testing.T) {
	_, nc, js, _ := ccSetup(t, 0)
	for _, s := range []string{"a", "b", "c", "a", "b", "a"} { // lasts: c 3, b 5, a 6
		if _, err := js.Publish(ctx(t), "cc."+s, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := js.CreateOrUpdatePushConsumer(ctx(t), "CC", jetstream.ConsumerConfig{Durable: "LP", DeliverSubject: "lp.in",
		DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy, AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: "cc.>"}); err != nil {
		t.Fatal(err)
	}
	sub, err := nc.SubscribeSync("lp.in")
	if err != nil {
		t.Fatal(err)
	}
	next := func() uint64 {
		t.Helper()
		m, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		md, err := m.Metadata()
		if err != nil {
			t.Fatal(err)
		}
		_ = m.Ack()
		return md.Sequence.Stream
	}
	var got []uint64
	for range 3 {
		got = append(got, next())
	}
	if _, err := js.Publish(ctx(t), "cc.b", []byte("b")); err != nil { // 7
		t.Fatal(err)
	}
	got = append(got, next())
	if !slices.Equal(got, []uint64{3, 5, 6, 7}) {
		t.Fatalf("delivered %v, want [3 5 6 7]", got)
	}
}
