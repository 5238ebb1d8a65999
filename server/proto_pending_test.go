package server

import (
	"net"
	"strings"
	"testing"
	"time"
)

// A client that sends PINGs and never reads is a slow consumer: PONG, like
// every other line written to a client, counts against max_pending, so the
// server closes it instead of queuing PONGs without bound (issue 16).
func TestProtoPingFloodIsSlowConsumer(t *testing.T) {
	o := testOptions()
	o.MaxPending = 32 * 1024
	o.MaxPayload = 16 * 1024
	o.WriteDeadline = 2 * time.Minute // a write-deadline close must not pass this test
	s := runServer(t, o)

	r := protoDial(t, s, protoQuiet)
	if tc, ok := r.nc.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096)
	}
	batch := []byte(strings.Repeat("PING\r\n", 64*1024/6))
	const maxSent = 32 << 20 // PONGs queued without a bound would pass this
	sent := 0
	for s.varz().SlowConsumers == 0 {
		if sent > maxSent {
			t.Fatalf("no slow consumer after %d MiB of PINGs", sent>>20)
		}
		_ = r.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
		n, err := r.nc.Write(batch)
		sent += n
		if err != nil {
			break // closed by the server
		}
	}
	protoWaitClosedReason(t, s, "Slow Consumer (Pending Bytes)")
	waitFor(t, 2*time.Second, "client removed", func() bool { return s.NumClients() == 0 })
	if n := s.varz().SlowConsumers; n != 1 {
		t.Fatalf("varz slow_consumers = %d, want 1", n)
	}
	t.Logf("closed after %d KiB of PINGs", sent>>10)
}

// The same for the 503 no-responders status a client's requests to nobody
// produce on its own subscription.
func TestProtoNoRespondersFloodIsSlowConsumer(t *testing.T) {
	o := testOptions()
	o.MaxPending = 32 * 1024
	o.MaxPayload = 16 * 1024
	o.WriteDeadline = 2 * time.Minute
	s := runServer(t, o)

	r := protoDial(t, s, `{"verbose":false,"pedantic":false,"headers":true,"no_responders":true}`)
	if tc, ok := r.nc.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096)
	}
	r.send("SUB _INBOX.r 1\r\n")
	protoFlush(r)
	batch := []byte(strings.Repeat("PUB nobody _INBOX.r 0\r\n\r\n", 64*1024/25))
	const maxSent = 32 << 20
	sent := 0
	for s.varz().SlowConsumers == 0 {
		if sent > maxSent {
			t.Fatalf("no slow consumer after %d MiB of requests", sent>>20)
		}
		_ = r.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
		n, err := r.nc.Write(batch)
		sent += n
		if err != nil {
			break
		}
	}
	protoWaitClosedReason(t, s, "Slow Consumer (Pending Bytes)")
	t.Logf("closed after %d KiB of requests", sent>>10)
}
