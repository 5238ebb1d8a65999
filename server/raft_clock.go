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
//
// Every group goroutine asks for the next tick after each tick: next
// takes no lock (a restart with thousands of groups had them queue on
// one), only atomics; the mutex guards starting and stopping the
// ticking goroutine.
type raftClock struct {
	mu     lockorder.Mutex[lockorder.RaftClock]
	live   bool                          // the ticking goroutine runs (guarded by mu)
	ch     atomic.Pointer[chan struct{}] // closed at the next tick
	waited atomic.Bool                   // a group asked for a tick since the last one
	idle   atomic.Bool                   // nobody waited at the last tick: the clock idles
	// kick wakes an idle clock (one pending kick is enough). Made before
	// the ticking goroutine first starts, never replaced: next touches
	// it only after seeing idle, which only that goroutine sets.
	kick  chan struct{}
	ticks atomic.Uint64 // ticks made (tests)
	// recheck: a route went away; the clock looks at node liveness as it
	// takes the kick, not at its next tick (raftPeersChanged).
	recheck atomic.Bool
	// lag sums how late the ticks came (raft_live_lag.go; the clock's
	// goroutine only).
	lag raftLag
	// wedgeScan is when the wedge scan last ran (raft_wedge.go; the
	// clock's goroutine only).
	wedgeScan time.Time
}

// raftPeersChanged makes a running clock look at node liveness at once.
// Idle, it looked only at its next tick: up to raftLivePingEvery (200 ms)
// later, or a raftTick after some group woke and kicked it, so after a
// kill -9 one survivor could learn of the death ticks before the other,
// start its quiet groups' election timeouts first and win most of the
// dead server's leaderships (TestJetStreamClusterDeadLeadersSplitEvenly
// once split 8/32 with per-group jitter but without this).
func (s *Server) raftPeersChanged() {
	c := &s.raftClock
	c.mu.Lock()
	kick, live := c.kick, c.live
	c.mu.Unlock()
	if !live {
		return
	}
	c.recheck.Store(true)
	select {
	case kick <- struct{}{}:
	default:
	}
}

// raftLivePingEvery paces the liveness PINGs (five per raftLiveTimeout).
var raftLivePingEvery = 4 * raftTick

// next returns a channel that is closed at the next tick.
func (c *raftClock) next() <-chan struct{} {
	p := c.ch.Load()
	if p == nil { // before the first tick
		ch := make(chan struct{})
		if !c.ch.CompareAndSwap(nil, &ch) {
			p = c.ch.Load()
		} else {
			p = &ch
		}
	}
	if !c.waited.Load() { // read first: thousands of groups share the line
		c.waited.Store(true)
	}
	if c.idle.Load() && c.idle.CompareAndSwap(true, false) {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
	return *p
}

// tick closes the current tick's channel; it reports whether a group
// waited for it (when none did, the clock idles until kicked). A group
// asking while tick runs either counts for this tick (busy) or finds the
// clock idle and kicks it: it never waits out an idle period.
func (c *raftClock) tick() (busy bool) {
	ch := make(chan struct{})
	if old := c.ch.Swap(&ch); old != nil {
		close(*old)
	}
	c.ticks.Add(1)
	if busy = c.waited.Swap(false); busy {
		return true
	}
	c.idle.Store(true)
	// A group that set waited after the swap above but read idle before
	// the store kicked nobody: take its wait back from idle here.
	if c.waited.Load() && c.idle.CompareAndSwap(true, false) {
		return true
	}
	return false
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
	due := s.clock.Now().Add(raftTick)
	for !s.shutdown.Load() {
		select { // a manual clock may never tick again
		case <-t.C():
		case <-c.kick: // a group woke while the clock idled, or a route went
			t.Stop()
			t.Reset(raftTick)
			due = s.clock.Now().Add(raftTick)
			if c.recheck.Swap(false) {
				s.checkLiveness(false, 0)
			}
			continue
		case <-s.quit:
		}
		next := raftTick
		if !c.tick() {
			next = raftLivePingEvery
		}
		t.Reset(next)
		now := s.clock.Now()
		late := int64(now.Sub(due))
		storeMax(&s.raft.elections.lateMax, late)
		due = now.Add(next)
		ping := now.Sub(lastPing) >= raftLivePingEvery-raftTick/2
		if ping {
			lastPing = now
		}
		s.checkLiveness(ping, late)
		s.checkWedged(now)
	}
	c.mu.Lock()
	c.live = false
	c.mu.Unlock()
}
