package server

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats.go/jetstream"
)

// raftSends is what a server counted sent so far: messages, of them
// heartbeats, and the RAFT and RAFTB frames that carried them.
type raftSends struct{ msgs, beats, raftFrames, batchFrames uint64 }

func raftSent(s *Server) raftSends {
	var r raftSends
	for i := range s.raft.msgs.sent {
		r.msgs += s.raft.msgs.sent[i].Load()
	}
	r.beats = s.raft.msgs.sent[raft.MsgHeartbeat].Load()
	r.raftFrames = s.raft.msgs.framesSent[frameRAFT].Load()
	r.batchFrames = s.raft.msgs.framesSent[frameRAFTB].Load()
	return r
}

func (a raftSends) minus(b raftSends) raftSends {
	return raftSends{a.msgs - b.msgs, a.beats - b.beats, a.raftFrames - b.raftFrames, a.batchFrames - b.batchFrames}
}

// TestRaftBatchRestartCoalesces: a restarted server wakes the n sleeping
// groups it is a member of, whose leaders on the two others heartbeat
// together on their server's clock until every group sleeps again. Those
// messages leave the survivors in RAFTB frames, many per frame: far fewer
// frames than messages, and than heartbeats alone (one frame per message
// without coalescing), and no RAFT frame (every message is small).
func TestRaftBatchRestartCoalesces(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	const n = 60
	for i := range n {
		createStream(t, js, jetstream.StreamConfig{Name: fmt.Sprintf("B%d", i), Subjects: []string{fmt.Sprintf("b.%d", i)}, Replicas: 3})
	}
	waitFor(t, 30*time.Second, "every group asleep", func() bool { return c.groupsAwake() == "" })
	before := []raftSends{raftSent(c.servers[0]), raftSent(c.servers[1])}
	c.servers[2].Shutdown()
	c.servers[2] = runServer(t, c.opts[2])
	waitFor(t, 60*time.Second, "the restarted server running every group", func() bool {
		groups, _ := c.servers[2].raftGroupsAsleep()
		return groups == n+1
	})
	waitFor(t, 60*time.Second, "every group asleep again", func() bool { return c.groupsAwake() == "" })
	var d raftSends
	for i, b := range before {
		x := raftSent(c.servers[i]).minus(b)
		d = raftSends{d.msgs + x.msgs, d.beats + x.beats, d.raftFrames + x.raftFrames, d.batchFrames + x.batchFrames}
	}
	t.Logf("survivors sent %d raft messages (%d heartbeats) in %d RAFTB and %d RAFT frames", d.msgs, d.beats, d.batchFrames, d.raftFrames)
	switch {
	case d.beats < n:
		t.Fatalf("%d heartbeats for %d woken groups", d.beats, n)
	case d.raftFrames != 0:
		t.Fatalf("%d RAFT frames between servers that speak %d", d.raftFrames, routeProtoRaftBatch)
	case d.batchFrames*2 > d.msgs:
		t.Fatalf("%d messages (%d heartbeats) in %d frames", d.msgs, d.beats, d.batchFrames)
	}
}

// TestRaftBatchMixedVersion: with a server that speaks route protocol 10
// (before RAFTB), the two newer ones send each other RAFTB frames and
// send it RAFT frames, which it sends back: streams replicated across
// all three take publishes and every replica stores them, whichever
// server leads.
func TestRaftBatchMixedVersion(t *testing.T) {
	c := runJSClusterWith(t, 3, func(i int, o *Options) {
		if i == 2 {
			o.routeProto = routeProtoRaftBatch - 1
		}
	})
	_, js := jsClient(t, c.servers[0])
	const n = 6
	for i := range n {
		name := fmt.Sprintf("M%d", i)
		createStream(t, js, jetstream.StreamConfig{Name: name, Subjects: []string{name}, Replicas: 3})
	}
	led := map[string]bool{}
	for i := range n {
		name := fmt.Sprintf("M%d", i)
		for range 3 {
			if _, err := js.Publish(ctx(t), name, []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
		c.waitAllApplied(t, name, 3, 3, 10*time.Second)
		led[c.leaderOf(name)] = true
	}
	old := c.servers[2]
	for _, s := range c.servers {
		t.Logf("%s: frames sent %v received %v", s.Name(), framesByName(&s.raft.msgs.framesSent), framesByName(&s.raft.msgs.framesRecv))
	}
	if b := old.raft.msgs.framesSent[frameRAFTB].Load() + old.raft.msgs.framesRecv[frameRAFTB].Load(); b != 0 {
		t.Fatalf("the server of route protocol %d sent or received %d RAFTB frames", routeProtoRaftBatch-1, b)
	}
	if old.raft.msgs.framesSent[frameRAFT].Load() == 0 || old.raft.msgs.framesRecv[frameRAFT].Load() == 0 {
		t.Fatal("the older server sent or received no RAFT frame")
	}
	for _, s := range c.servers[:2] {
		if s.raft.msgs.framesSent[frameRAFTB].Load() == 0 || s.raft.msgs.framesRecv[frameRAFTB].Load() == 0 {
			t.Fatalf("%s sent or received no RAFTB frame", s.Name())
		}
	}
	t.Logf("leaders: %v", led)
}

// TestRaftBatchOneTickFewFrames: n groups' heartbeats sent at once (their
// goroutines released together, as a tick of the raft clock releases
// them) reach the peer in a few RAFTB frames, not one frame each, and
// every one of them arrives (the peer runs none of the groups: it counts
// them as not running).
func TestRaftBatchOneTickFewFrames(t *testing.T) {
	c := runJSCluster(t, 2)
	s1, s2 := c.servers[0], c.servers[1]
	from, to := raftID(s1.Name()), raftID(s2.Name())
	const n, rounds = 100, 5
	trs := make([]*raftTransport, n)
	for i := range trs {
		trs[i] = &raftTransport{s: s1, group: fmt.Sprintf("T%d", i)}
	}
	sent0, got0 := s1.raft.msgs.framesSent[frameRAFTB].Load(), s2.raft.notRunning.Load()
	single0 := s1.raft.msgs.framesSent[frameRAFT].Load()
	for round := range rounds {
		start := make(chan struct{})
		var wg sync.WaitGroup
		for _, tr := range trs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				tr.Send([]raft.Message{{Type: raft.MsgHeartbeat, From: from, To: to, Term: uint64(round + 1)}})
			}()
		}
		close(start)
		wg.Wait()
	}
	waitFor(t, 10*time.Second, "every heartbeat at the peer", func() bool { return s2.raft.notRunning.Load()-got0 >= n*rounds })
	frames := s1.raft.msgs.framesSent[frameRAFTB].Load() - sent0 // the meta group's included
	t.Logf("%d heartbeats in %d RAFTB frames", n*rounds, frames)
	if single := s1.raft.msgs.framesSent[frameRAFT].Load() - single0; single != 0 || frames == 0 {
		t.Fatalf("%d RAFT frames, %d RAFTB frames", single, frames)
	}
	if frames*4 > n*rounds {
		t.Fatalf("%d heartbeats in %d frames", n*rounds, frames)
	}
}

// TestRaftBatchPeerVersionChangesOnRestart: a server that comes back
// under the same name speaking route protocol 10, then 11 again, is sent
// what its new route speaks (the choice is made per route, per message):
// RAFT frames while it is older, RAFTB frames once it is newer, and the
// streams replicated across all three take publishes and every replica
// stores them each time.
func TestRaftBatchPeerVersionChangesOnRestart(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	const n = 3
	for i := range n {
		name := fmt.Sprintf("V%d", i)
		createStream(t, js, jetstream.StreamConfig{Name: name, Subjects: []string{name}, Replicas: 3})
	}
	var last uint64
	publishAll := func() {
		t.Helper()
		last++
		for i := range n {
			name := fmt.Sprintf("V%d", i)
			// Right after a restart a stream may have no leader yet: the
			// publish is retried, its id keeping it stored once.
			id := fmt.Sprintf("%s-%d", name, last)
			waitFor(t, 20*time.Second, "a publish to "+name, func() bool {
				_, err := js.Publish(ctx(t), name, []byte("x"), jetstream.WithMsgID(id))
				return err == nil
			})
			c.waitAllApplied(t, name, 3, last, 20*time.Second)
		}
	}
	publishAll()
	for _, proto := range []int{routeProtoRaftBatch - 1, routeProtoRaftBatch} {
		c.servers[2].Shutdown()
		o := *c.opts[2]
		o.routeProto = proto
		c.servers[2] = runServer(t, &o)
		waitForMesh(t, c.servers)
		publishAll()
		s := c.servers[2]
		batched := s.raft.msgs.framesSent[frameRAFTB].Load() + s.raft.msgs.framesRecv[frameRAFTB].Load()
		t.Logf("restarted speaking %d: frames sent %v received %v", proto, framesByName(&s.raft.msgs.framesSent), framesByName(&s.raft.msgs.framesRecv))
		switch {
		case proto < routeProtoRaftBatch && batched != 0:
			t.Fatalf("the server speaking %d sent or received %d RAFTB frames", proto, batched)
		case proto >= routeProtoRaftBatch && (s.raft.msgs.framesSent[frameRAFTB].Load() == 0 || s.raft.msgs.framesRecv[frameRAFTB].Load() == 0):
			t.Fatalf("the server speaking %d sent or received no RAFTB frame", proto)
		}
	}
}
