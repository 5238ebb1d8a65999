package server

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestHeadersOnlyHeader(t *testing.T) {
	for _, c := range []struct{ hdr, want string }{
		{"", "NATS/1.0\r\nNats-Msg-Size: 5\r\n\r\n"},
		{"NATS/1.0\r\nA: b\r\n\r\n", "NATS/1.0\r\nA: b\r\nNats-Msg-Size: 5\r\n\r\n"},
		{"x", "x\r\nNats-Msg-Size: 5\r\n\r\n"}, // malformed stored headers do not panic
		{"\n", "\n\r\nNats-Msg-Size: 5\r\n\r\n"},
	} {
		if got := string(headersOnly([]byte(c.hdr), 5)); got != c.want {
			t.Errorf("headersOnly(%q) = %q, want %q", c.hdr, got, c.want)
		}
	}
}

// A stored message whose header block a client made malformed is sent by
// a headers_only consumer without taking the server down.
func TestConsumerPushHeadersOnlyMalformedHeader(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	consumerStream(t, js, jetstream.MemoryStorage, 0)
	r := dialRaw(t, s)
	r.connect(`{"verbose":false,"headers":true,"protocol":1}`)
	r.send("HPUB s.x 1 1\r\nx\r\nPING\r\n")
	r.expect("PONG\r\n")
	sub, _ := nc.SubscribeSync("ho")
	if _, err := legacyJS(t, nc).AddConsumer("S", &nats.ConsumerConfig{Durable: "HO", DeliverSubject: "ho", AckPolicy: nats.AckNonePolicy, HeadersOnly: true}); err != nil {
		t.Fatal(err)
	}
	if m := nextMsg(t, sub, 2*time.Second); m.Subject != "s.x" || len(m.Data) != 0 {
		t.Fatalf("headers only delivery: %s %q", m.Subject, m.Data)
	}
}
