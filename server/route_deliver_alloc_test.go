package server

import (
	"net"
	"testing"
)

// A publish routed to a stream leader's queue group (streamIngestQueue)
// allocates nothing on its way: the follower that routes it names the one
// group without a list of its own, and the leader hands it to the group's
// local member without copying the members (both were an allocation per
// message, which showed as R3 publishes through a follower running slower
// than through the leader).
func TestRoutedIngestCopyAllocatesNothing(t *testing.T) {
	s := runServer(t, testOptions())
	acc := s.globalAccount()
	got := 0
	sub, err := acc.subscribeInternal("in.>", streamIngestQueue, func(*subscription, *client, *Account, string, string, []byte, []byte) { got++ })
	if err != nil {
		t.Fatal(err)
	}
	defer acc.unsubscribe(sub)
	queues, payload := []string{streamIngestQueue}, []byte("hi")
	deliver := func() { s.deliverRouted(nil, acc, "in.x", "", '0', queues, nil, payload) }
	for range 3 { // the subject's match is cached by now (admitted on a repeated miss)
		deliver()
	}
	if n := testing.AllocsPerRun(100, deliver); n != 0 {
		t.Fatalf("a routed copy for the leaders' queue group made %v allocations, want 0", n)
	}
	if got != 104 {
		t.Fatalf("the group's member got %d copies, want 104 (3 + AllocsPerRun's 101)", got)
	}

	// The routing side: one copy for one group on a route.
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	peer := &route{remote: routeInfo{ID: "P", Name: "P", Proto: routeProto}}
	peer.c = newClient(s, a, s.cidGen.Add(1))
	peer.c.route = peer
	wake := map[*client]struct{}{}
	drain := func() { // as the write loop does
		chunks, _ := peer.c.out.take()
		peer.c.out.recycle(chunks)
	}
	forward := func() {
		var fwd routeForwards
		fwd.queue(peer.c, streamIngestQueue)
		fwd.send(nil, wake, acc, "in.x", "", nil, payload)
		clear(wake)
		drain()
	}
	// What writing the copy itself costs (the output's chunk pool).
	write := func() {
		peer.c.mu.Lock()
		peer.c.appendRMSGLocked(acc.Name, "in.x", "", false, queues, nil, payload)
		peer.c.mu.Unlock()
		drain()
	}
	for range 3 {
		forward()
		write()
	}
	if n, w := testing.AllocsPerRun(100, forward), testing.AllocsPerRun(100, write); n != w {
		t.Fatalf("routing a copy to one queue group made %v allocations, writing it %v: want no more", n, w)
	}
}
