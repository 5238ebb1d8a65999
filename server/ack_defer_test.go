package server

import (
	"net"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// TestDeferredAcksAllocateOnlyReplies: a file stream's acks deferred to the
// end of a read batch (the client's read batch hook, ack_defer.go) allocate
// nothing per publish beyond each ack's copy of its reply subject, and
// nothing per batch: the hook is added to the client once and reused.
func TestDeferredAcksAllocateOnlyReplies(t *testing.T) {
	s := runJSServer(t)
	_, js := jsClient(t, s)
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "A", Subjects: []string{"a.>"}, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	mset := s.js.Load().account(globalAccountName).lookup("A")
	if mset == nil {
		t.Fatal("stream A not found")
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := newClient(s, a, s.cidGen.Add(1))
	ack := []byte(`{"stream":"A","seq":1}`)
	const perBatch = 8
	batch := func() {
		for range perBatch {
			deferAck(c, mset, "_INBOX.acks", ack)
		}
		c.endReadBatch()
	}
	batch()
	batch() // the hook is added and the reply subject's match cached by now
	if len(c.readHooks) != 1 {
		t.Fatalf("client has %d read batch hooks, want 1", len(c.readHooks))
	}
	n := testing.AllocsPerRun(100, batch)
	t.Logf("%v allocations per batch of %d", n, perBatch)
	if n > perBatch {
		t.Fatalf("a batch of %d deferred acks made %v allocations, want at most %d (the replies)", perBatch, n, perBatch)
	}
	if h := readHook[ackBatch](c); len(h.acks) != 0 || len(h.flushed) != 0 {
		t.Fatalf("batch left %d acks and %d streams queued", len(h.acks), len(h.flushed))
	}
}
