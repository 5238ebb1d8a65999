package server

import "github.com/nats-io/nats-server/v2/internal/lockorder"

// raftClock is the one timer behind every raft group's ticks. Groups tick
// together, so their heartbeats leave at the same moment and share each
// route's write: one write per route per tick instead of one per group.
// With a timer per group, a server holding a hundred idle R3 streams spent
// most of a core writing heartbeats one by one.
type raftClock struct {
	mu   lockorder.Mutex[lockorder.RaftClock]
	ch   chan struct{} // closed at the next tick
	live bool          // the ticking goroutine runs
}

// next returns a channel that is closed at the next tick.
func (c *raftClock) next() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch == nil {
		c.ch = make(chan struct{})
	}
	return c.ch
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
	s.wg.Add(1)
	go s.runRaftClock()
}

// runRaftClock ticks until the server shuts down.
func (s *Server) runRaftClock() {
	defer s.wg.Done()
	t := s.clock.NewTicker(raftTick)
	defer t.Stop()
	c := &s.raftClock
	for n := 0; !s.shutdown.Load(); n++ {
		select { // a manual clock may never tick again
		case <-t.C():
		case <-s.quit:
		}
		c.mu.Lock()
		if c.ch != nil {
			close(c.ch)
		}
		c.ch = make(chan struct{})
		c.mu.Unlock()
		s.checkLiveness(n%raftHeartbeatTicks == 0)
	}
	c.mu.Lock()
	c.live = false
	c.mu.Unlock()
}
