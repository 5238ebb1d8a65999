package server

// Held meta requests (jetstream_meta_hold.go) wait for the leader they
// believed in to go and another to be known (and, if it is this server,
// ready). Everything they look at changes in one of two places, which
// wake them: the meta group's soft state (leader, role, readiness), when
// the Ready that carried it is processed (metaSM.leaderChanged), and the
// peers' health view, when checkLiveness publishes a new one (a route
// gone, a peer silent, a new incarnation). A hold reads the wake channel
// before it looks, so a change after its look closes the channel it then
// waits on; it waits on timers only for its deadline and for sending a
// copy again. The channel is made only while someone waits: one per
// change, shared by every hold (at most maxMetaHolds), each of which also
// ends on the server's quit.

// holdWakeChan is the channel closed at the next change (under jc.mu).
func (jc *jsCluster) holdWakeChan() <-chan struct{} {
	jc.mu.Lock()
	defer jc.mu.Unlock()
	if jc.holdWake == nil {
		jc.holdWake = make(chan struct{})
	}
	return jc.holdWake
}

// wakeHolds tells the held requests that the meta leader or a peer's
// health may have changed.
func (jc *jsCluster) wakeHolds() {
	jc.mu.Lock()
	defer jc.mu.Unlock()
	if jc.holdWake != nil {
		close(jc.holdWake)
		jc.holdWake = nil
	}
}

// livenessChanged wakes the held meta requests once the peers' health
// view changed (raft_live.go checkLiveness).
func (s *Server) livenessChanged() {
	if js := s.js.Load(); js != nil && js.cluster != nil {
		js.cluster.wakeHolds()
	}
}
