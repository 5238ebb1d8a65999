package server

import (
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/internal/lockorder"
)

// raftClock is the one timer behind every raft group's ticks. Groups tick
// together, so their heartbeats leave at the same moment and share each
// route's write: one write per route per tick instead of one per group.
// With a timer per group, a server holding a hundred idle R3 streams spent
// most of a core writing heartbeats one by one.
//
// When every group sleeps (quiescent, raft_live.go) nobody waits for a
// tick: the clock then wakes only every raftLivePingEvery, to ping the
// routes and look at node liveness, instead of every raftTick. A group
// that asks for the next tick while the clock idles wakes it (kick): its
// ticks resume from that moment.
type raftClock struct {
	mu     lockorder.Mutex[lockorder.RaftClock]
	ch     chan struct{} // closed at the next tick
	live   bool          // the ticking goroutine runs
	waited bool          // a group asked for a tick since the last one
	idle   bool          // nobody waited at the last tick: the clock idles
	kick   chan struct{} // wakes an idle clock (one pending kick is enough)
	ticks  atomic.Uint64 // ticks made (tests)
}

// raftLivePingEvery paces the liveness PINGs (five per raftLiveTimeout).
var raftLivePingEvery = 4 * raftTick

// next returns a channel that is closed at the next tick.
func (c *raftClock) next() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch == nil {
		c.ch = make(chan struct{})
	}
	c.waited = true
	if c.idle {
		c.idle = false
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
	return c.ch
}

// tick closes the current tick's channel; it reports whether a group
// waited for it (when none did, the clock idles until kicked).
func (c *raftClock) tick() (busy bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch != nil {
		close(c.ch)
	}
	c.ch = make(chan struct{})
	c.ticks.Add(1)
	busy = c.waited
	c.waited, c.idle = false, !busy
	return busy
}

// start runs the clock if it is not running yet. The caller holds
// s.raft.mu with the registry open, so the WaitGroup cannot be waited on
// concurrently.
func (s *Server) startRaftClock() {
	c := &s.raftClock
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live {
		return
	}
	c.live = true
	if c.kick == nil {
		c.kick = make(chan struct{}, 1)
	}
	s.wg.Add(1)
	go s.runRaftClock()
}

// runRaftClock ticks until the server shuts down: every raftTick while
// a group waits for ticks, every raftLivePingEvery while none does.
func (s *Server) runRaftClock() {
	defer s.wg.Done()
	c := &s.raftClock
	t := s.clock.NewTimer(raftTick)
	defer t.Stop()
	var lastPing time.Time
	for !s.shutdown.Load() {
		select { // a manual clock may never tick again
		case <-t.C():
		case <-c.kick: // a group woke while the clock idled
			t.Stop()
			t.Reset(raftTick)
			continue
		case <-s.quit:
		}
		next := raftTick
		if !c.tick() {
			next = raftLivePingEvery
		}
		t.Reset(next)
		now := s.clock.Now()
		ping := now.Sub(lastPing) >= raftLivePingEvery-raftTick/2
		if ping {
			lastPing = now
		}
		s.checkLiveness(ping)
	}
	c.mu.Lock()
	c.live = false
	c.mu.Unlock()
}
