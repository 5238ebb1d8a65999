package server

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// TestRaftBatchInterleavedWriters: every writer of a route's output at
// once (raft records of many groups from their own goroutines, large raft
// messages that go as RAFT frames, RMSGs from a client's publishes, route
// PINGs) over the real write loop and read loop: the route never closes
// on a corrupted frame, the peer counts every small record, the
// subscriber gets every message, and one group's messages, small ones
// batched and large ones in RAFT frames between them, arrive in the order
// sent.
func TestRaftBatchInterleavedWriters(t *testing.T) {
	c := runJSCluster(t, 2)
	s1, s2 := c.servers[0], c.servers[1]
	from, to := raftID(s1.Name()), raftID(s2.Name())
	const ordered = 200
	g := &raftGroup{inbox: newRaftQueue[raft.Message](ordered + 10)}
	s2.raft.mu.Lock()
	s2.raft.groups["ORD"] = g
	s2.raft.mu.Unlock()
	t.Cleanup(func() {
		s2.raft.mu.Lock()
		delete(s2.raft.groups, "ORD")
		s2.raft.mu.Unlock()
	})
	sub := connectNATS(t, s2.ClientURL())
	ss, err := sub.SubscribeSync("il.x")
	if err != nil {
		t.Fatal(err)
	}
	_ = sub.Flush()
	waitForInterest(t, c.servers, "il.x")
	pub := connectNATS(t, s1.ClientURL())
	r1 := s1.routeForPeer(to)
	if r1 == nil || !s1.batchesRaftTo(r1) {
		t.Fatal("no batching route to the peer")
	}
	notRunning0 := s2.raft.notRunning.Load()

	const groups, rounds, pubs = 16, 150, 400
	var wg sync.WaitGroup
	for i := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr := &raftTransport{s: s1, group: fmt.Sprintf("IL%d", i)}
			for k := range rounds {
				tr.Send([]raft.Message{
					{Type: raft.MsgHeartbeat, From: from, To: to, Term: 1, Commit: uint64(k)},
					{Type: raft.MsgApp, From: from, To: to, Term: 1, Index: uint64(k),
						Entries: []raft.Entry{{Term: 1, Index: uint64(k + 1), Data: bytes.Repeat([]byte{'e'}, 1+k*13%4000)}}},
				})
			}
		}()
	}
	wg.Add(3)
	go func() { // one group: small and large messages alternate
		defer wg.Done()
		tr := &raftTransport{s: s1, group: "ORD"}
		for k := 1; k <= ordered; k++ {
			size := 10
			if k%3 == 0 {
				size = raftBatchRecordMax + 1000 // a RAFT frame
			}
			tr.Send([]raft.Message{{Type: raft.MsgApp, From: from, To: to, Term: 1, Index: uint64(k),
				Entries: []raft.Entry{{Term: 1, Index: uint64(k), Data: bytes.Repeat([]byte{'o'}, size)}}}})
		}
	}()
	go func() {
		defer wg.Done()
		for k := range pubs {
			if err := pub.Publish("il.x", bytes.Repeat([]byte{'m'}, 1+k*997%50000)); err != nil {
				t.Error(err)
				return
			}
		}
		_ = pub.Flush()
	}()
	go func() {
		defer wg.Done()
		for range 500 {
			r1.c.queueProto(pingLine)
		}
	}()
	wg.Wait()

	want := uint64(groups * rounds * 2)
	waitFor(t, 30*time.Second, "every record at the peer", func() bool { return s2.raft.notRunning.Load()-notRunning0 >= want })
	if got := s2.raft.notRunning.Load() - notRunning0; got != want {
		t.Fatalf("%d records at the peer, want %d", got, want)
	}
	for k := range pubs {
		m, err := ss.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("message %d: %v", k, err)
		}
		if len(m.Data) != 1+k*997%50000 {
			t.Fatalf("message %d of %d bytes, want %d", k, len(m.Data), 1+k*997%50000)
		}
	}
	var got []uint64
	waitFor(t, 10*time.Second, "the ordered group's messages", func() bool {
		for {
			m, ok := g.inbox.pop()
			if !ok {
				return len(got) >= ordered
			}
			got = append(got, m.Index)
		}
	})
	for i, idx := range got {
		if idx != uint64(i+1) {
			t.Fatalf("the ordered group got %v", got)
		}
	}
	if s1.routeForPeer(to) != r1 {
		t.Fatal("the route was replaced: a frame broke it")
	}
	if d := s1.raft.msgs.batchDropped.Load(); d != 0 {
		t.Fatalf("%d records dropped", d)
	}
}
