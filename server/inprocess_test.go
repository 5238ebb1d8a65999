package server

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// nats.InProcessServer connects through InProcessConn; with DontListen the
// server opens no client port and still serves in-process clients, and a
// server that is not running refuses them.
func TestInProcessConn(t *testing.T) {
	o := testOptions()
	o.DontListen = true
	s := runServer(t, o)
	if s.Addr() != nil {
		t.Fatalf("DontListen server listens on %v", s.Addr())
	}
	pub, err := nats.Connect("", nats.InProcessServer(s))
	if err != nil {
		t.Fatalf("in-process connect: %v", err)
	}
	defer pub.Close()
	sub, err := nats.Connect("", nats.InProcessServer(s))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ss, err := sub.SubscribeSync("foo")
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := pub.Publish("foo", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if m, err := ss.NextMsg(2 * time.Second); err != nil || string(m.Data) != "hello" {
		t.Fatalf("got %v, %v", m, err)
	}
	if n := s.NumClients(); n != 2 {
		t.Fatalf("NumClients = %d, want 2", n)
	}
	s.Shutdown()
	if _, err := s.InProcessConn(); err == nil {
		t.Fatal("InProcessConn on a shut down server succeeded")
	}
}
