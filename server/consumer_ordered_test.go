package server

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// seqRecorder collects the stream sequences a callback sees.
type seqRecorder struct {
	mu   sync.Mutex
	seqs []uint64
}

func (r *seqRecorder) add(seq uint64) {
	r.mu.Lock()
	r.seqs = append(r.seqs, seq)
	r.mu.Unlock()
}

func (r *seqRecorder) snapshot() []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]uint64(nil), r.seqs...)
}

// checkInOrder fails unless seqs is exactly 1..n.
func checkInOrder(t *testing.T, seqs []uint64, n int) {
	t.Helper()
	if len(seqs) != n {
		t.Fatalf("got %d messages, want %d: %v", len(seqs), n, seqs)
	}
	for i, s := range seqs {
		if s != uint64(i+1) {
			t.Fatalf("message %d has stream sequence %d: %v", i, s, seqs)
		}
	}
}

// deleteOnlyConsumer deletes the stream's one consumer (the ordered one).
func deleteOnlyConsumer(t *testing.T, js jetstream.JetStream, stream string) {
	t.Helper()
	st, err := js.Stream(ctx(t), stream)
	if err != nil {
		t.Fatal(err)
	}
	names := st.ConsumerNames(ctx(t))
	var list []string
	for n := range names.Name() {
		list = append(list, n)
	}
	if len(list) != 1 {
		t.Fatalf("consumers: %v", list)
	}
	if err := st.DeleteConsumer(ctx(t), list[0]); err != nil {
		t.Fatal(err)
	}
}

// The legacy ordered push consumer (what KV watch and object get use):
// ephemeral, AckNone, flow control and heartbeats. Deleting it under the
// client makes the client notice (missing heartbeats) and recreate it from
// the next stream sequence: nothing lost, nothing twice.
func TestConsumerOrderedPushLegacy(t *testing.T) {
	for _, st := range []jetstream.StorageType{jetstream.FileStorage, jetstream.MemoryStorage} {
		t.Run(st.String(), func(t *testing.T) {
			s := runJSServer(t)
			nc, js := jsClient(t, s)
			consumerStream(t, js, st, 50)
			var rec seqRecorder
			sub, err := legacyJS(t, nc).Subscribe("s.>", func(m *nats.Msg) {
				md, _ := m.Metadata()
				rec.add(md.Sequence.Stream)
			}, nats.OrderedConsumer(), nats.IdleHeartbeat(100*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Unsubscribe()
			waitFor(t, 5*time.Second, "50 messages", func() bool { return len(rec.snapshot()) >= 50 })
			ci, err := sub.ConsumerInfo()
			if err != nil || !ci.PushBound || !ci.Config.FlowControl || ci.Config.AckPolicy != nats.AckNonePolicy || !ci.Config.MemoryStorage {
				t.Fatalf("ordered consumer info: %v %+v", err, ci)
			}
			deleteOnlyConsumer(t, js, "S")
			for i := 51; i <= 100; i++ {
				js.Publish(ctx(t), fmt.Sprintf("s.%d", i), nil)
			}
			waitFor(t, 10*time.Second, "100 messages", func() bool { return len(rec.snapshot()) >= 100 })
			// One more: a duplicate delivered meanwhile would come before it.
			js.Publish(ctx(t), "s.last", nil)
			waitFor(t, 5*time.Second, "101 messages", func() bool { return len(rec.snapshot()) >= 101 })
			checkInOrder(t, rec.snapshot(), 101)
		})
	}
}

// The jetstream package's ordered consumer (pull) resets the same way.
func TestConsumerOrderedPullReset(t *testing.T) {
	s := runJSServer(t)
	_, js := jsClient(t, s)
	consumerStream(t, js, jetstream.FileStorage, 50)
	c, err := js.OrderedConsumer(ctx(t), "S", jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var rec seqRecorder
	cc, err := c.Consume(func(m jetstream.Msg) {
		md, _ := m.Metadata()
		rec.add(md.Sequence.Stream)
	}, jetstream.PullHeartbeat(500*time.Millisecond), jetstream.PullExpiry(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Stop()
	waitFor(t, 5*time.Second, "50 messages", func() bool { return len(rec.snapshot()) >= 50 })
	deleteOnlyConsumer(t, js, "S")
	for i := 51; i <= 100; i++ {
		js.Publish(ctx(t), fmt.Sprintf("s.%d", i), nil)
	}
	waitFor(t, 10*time.Second, "100 messages", func() bool { return len(rec.snapshot()) >= 100 })
	js.Publish(ctx(t), "s.last", nil)
	waitFor(t, 5*time.Second, "101 messages", func() bool { return len(rec.snapshot()) >= 101 })
	checkInOrder(t, rec.snapshot(), 101)
}
