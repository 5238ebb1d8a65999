package server

import "time"

// LameDuckShutdown enters lame duck mode and shuts down when done.
func (s *Server) LameDuckShutdown() { s.lameDuckMode() }

// lameDuckMode stops accepting, tells clients (INFO ldm:true), waits the
// grace period, closes clients spread over the lame duck duration, then
// shuts down.
func (s *Server) lameDuckMode() {
	if s.ldm.Swap(true) || s.shutdown.Load() {
		return
	}
	o := s.getOpts()
	s.Noticef("Entering lame duck mode, stop accepting new clients")
	s.mu.Lock()
	if s.listener != nil {
		s.listener.Close()
	}
	clients := make([]*client, 0, len(s.clients))
	for _, c := range s.clients {
		clients = append(clients, c)
	}
	s.mu.Unlock()
	for _, c := range clients {
		c.sendAsyncInfo()
	}
	if s.sleepOrShutdown(o.LameDuckGracePeriod) {
		return
	}
	if n := len(clients); n > 0 {
		step := (o.LameDuckDuration - o.LameDuckGracePeriod) / time.Duration(n)
		step = max(step, time.Millisecond)
		for _, c := range clients {
			c.closeConnection(ServerShutdown)
			if s.sleepOrShutdown(step) {
				return
			}
		}
	}
	s.Shutdown()
}

// sleepOrShutdown waits d; true if the server began shutting down
// meanwhile (Shutdown waits for the goroutines that sleep here).
func (s *Server) sleepOrShutdown(d time.Duration) bool {
	select {
	case <-time.After(d):
		return s.shutdown.Load()
	case <-s.quit: // Shutdown began: it waits for the sleepers
		return true
	}
}

// sendAsyncInfo sends the current INFO to a protocol-1 client.
func (c *client) sendAsyncInfo() {
	c.mu.Lock()
	if c.closing || c.opts.Protocol < 1 {
		c.mu.Unlock()
		return
	}
	c.queueLocked(c.srv.infoFor(c))
	c.mu.Unlock()
	c.out.signal()
}
