//go:build !race

package server

import (
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestNoRaceConsumerKill9AckSync kills the server with SIGKILL right after
// AckSyncs were answered: after a restart none of those messages comes
// back, and every other message is still delivered (at least once).
func TestNoRaceConsumerKill9AckSync(t *testing.T) {
	p, args := startJSProcess(t)
	port, url := p.port, p.url()
	nc := connectNATS(t, url)
	js, _ := jetstream.New(nc)
	consumerStream(t, js, jetstream.FileStorage, 50)
	c, err := js.CreateOrUpdateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Fetch(40, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for m := range b.Messages() {
		n++
		if n <= 30 {
			if err := m.DoubleAck(ctx(t)); err != nil {
				t.Fatal(err)
			}
		} else {
			m.Ack()
		}
	}
	if n != 40 {
		t.Fatalf("fetched %d", n)
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
	nc.Close()

	startProcess(t, port, args...)
	nc2 := connectNATS(t, url)
	js2, _ := jetstream.New(nc2)
	c, err = js2.Consumer(ctx(t), "S", "D")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]bool{}
	for {
		b, err := c.Fetch(50, jetstream.FetchMaxWait(500*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for m := range b.Messages() {
			md, _ := m.Metadata()
			if md.Sequence.Stream <= 30 {
				t.Fatalf("message %d came back after its AckSync was answered", md.Sequence.Stream)
			}
			seen[md.Sequence.Stream] = true
			m.Ack()
			got++
		}
		if got == 0 {
			break
		}
	}
	for seq := uint64(41); seq <= 50; seq++ {
		if !seen[seq] {
			t.Fatalf("message %d never delivered after the restart (seen %v)", seq, seen)
		}
	}
}
