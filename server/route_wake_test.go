package server

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"testing"
	"time"
)

// Routed messages for a client (a stream leader's pub acks for a client
// publishing through this server) wake the client's write loop once per
// route read buffer, not once per message: woken at each, it wrote each
// ack on its own while the route's read loop went on parsing the batch.
func TestRoutedDeliveriesWakeOncePerRead(t *testing.T) {
	s := runServer(t, testOptions())
	dst := ackReceiver(t, s)

	// deliverRouted gathers the receivers in wake instead of waking them.
	wake := map[*client]struct{}{}
	for i := range 10 {
		s.deliverRouted(wake, s.globalAccount(), fmt.Sprintf("ack.%d", i), "", '1', nil, nil, []byte("ok"))
	}
	if len(dst.out.sig) != 0 {
		t.Fatal("a routed delivery woke the receiver's write loop before the read ended")
	}
	if _, ok := wake[dst]; !ok || len(wake) != 1 {
		t.Fatalf("wake holds %d clients, want the receiver", len(wake))
	}
	wakeAll(wake)
	if len(dst.out.sig) != 1 {
		t.Fatal("wakeAll did not wake the receiver")
	}
	if got := takeOut(dst); bytes.Count(got, []byte("MSG ack.")) != 10 {
		t.Fatalf("receiver has %q, want 10 messages", got)
	}
	<-dst.out.sig

	// The route's read loop wakes them once its buffer is parsed.
	ra, rb := net.Pipe()
	peer := &route{remote: routeInfo{ID: "P", Name: "P", Proto: routeProto}, br: bufio.NewReaderSize(ra, 64<<10)}
	peer.c = newClient(s, ra, s.cidGen.Add(1))
	peer.c.route = peer
	loop := make(chan error, 1)
	go func() { loop <- s.routeReadLoop(peer) }()
	var batch bytes.Buffer
	for i := range 10 {
		fmt.Fprintf(&batch, "RMSG $G ack.%d - 1 - 0 2\r\nok\r\n", i)
	}
	if _, err := rb.Write(batch.Bytes()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-dst.out.sig:
	case <-time.After(10 * time.Second):
		t.Fatal("the read loop did not wake the receiver once its buffer was parsed")
	}
	if got := takeOut(dst); bytes.Count(got, []byte("MSG ack.")) != 10 {
		t.Fatalf("receiver has %q, want the 10 routed messages", got)
	}
	rb.Close()
	<-loop
}

// takeOut takes what c's write loop would write next.
func takeOut(c *client) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	chunks, _ := c.out.take()
	return bytes.Join(chunks, nil)
}

// A route read that ends inside an operation (its rest still on the wire)
// left the read buffer non-empty, and the receivers of the messages
// delivered before it unwoken until the rest came: a busy peer whose
// every read ends inside an operation kept them unwoken for good, their
// output piling up to a slow-consumer close. They are woken before any
// read that may block: the line's rest, or a payload's.
func TestRoutedDeliveriesWakeBeforeBlockingRead(t *testing.T) {
	s := runServer(t, testOptions())
	dst := ackReceiver(t, s)

	ra, rb := net.Pipe()
	peer := &route{remote: routeInfo{ID: "P", Name: "P", Proto: routeProto}, br: bufio.NewReaderSize(ra, 64<<10)}
	peer.c = newClient(s, ra, s.cidGen.Add(1))
	peer.c.route = peer
	loop := make(chan error, 1)
	go func() { loop <- s.routeReadLoop(peer) }()
	defer func() { rb.Close(); <-loop }()
	for _, cut := range []string{"RMSG $G ack.", "RMSG $G ack.x - 1 - 0 2\r\no"} { // inside a line; inside a payload
		var batch bytes.Buffer
		for i := range 10 {
			fmt.Fprintf(&batch, "RMSG $G ack.%d - 1 - 0 2\r\nok\r\n", i)
		}
		batch.WriteString(cut)
		if _, err := rb.Write(batch.Bytes()); err != nil {
			t.Fatal(err)
		}
		select {
		case <-dst.out.sig:
		case <-time.After(5 * time.Second):
			t.Fatalf("cut at %q: the receiver of 10 routed messages was not woken while the read loop waited for the rest", cut)
		}
		if got := takeOut(dst); bytes.Count(got, []byte("MSG ack.")) != 10 {
			t.Fatalf("cut at %q: receiver has %q, want the 10 routed messages", cut, got)
		}
		// The rest of the cut operation: a whole message for the next round.
		rest := "x - 1 - 0 2\r\nok\r\n"
		if cut != "RMSG $G ack." {
			rest = "k\r\n"
		}
		if _, err := rb.Write([]byte(rest)); err != nil {
			t.Fatal(err)
		}
		select {
		case <-dst.out.sig:
		case <-time.After(5 * time.Second):
			t.Fatalf("cut at %q: the completed message was not delivered", cut)
		}
		if got := takeOut(dst); bytes.Count(got, []byte("MSG ack.")) != 1 {
			t.Fatalf("cut at %q: receiver has %q, want the completed message", cut, got)
		}
	}
}

// ackReceiver is a client of s on a pipe subscribed to "ack.>", removed
// and closed at the end of the test.
func ackReceiver(t *testing.T, s *Server) *client {
	t.Helper()
	acc := s.globalAccount()
	ca, cb := net.Pipe()
	dst := newClient(s, ca, s.cidGen.Add(1))
	sub := &subscription{client: dst, subject: "ack.>", sid: "1"}
	if err := acc.insertSub(sub); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		acc.sl.Remove(sub.subject, sub.queue, sub)
		dst.closeNow(ClientClosed)
		cb.Close()
	})
	return dst
}
