package server

import (
	"sync/atomic"
	"time"
)

// restartProgress counts the replicas this server started from what it
// held (a snapshot's or its meta log's assignments: startRestored,
// startReplayed) and how many of those became current (streamSM.observed),
// and logs how long after the process start all of them were current: what
// a restart with thousands of streams costs before the server serves each
// of them again (scripts/stream-scale prints the line).
type restartProgress struct {
	started atomic.Int64 // counted by startStreamGroup (stream_repair.go)
	current atomic.Int64
	// heldAtStart: the server held meta state when JetStream started
	// (Server.metaHeld then), so it restarts (jetstream_balance_hold.go).
	heldAtStart bool
}

// restartLogMin is the fewest replicas whose catching up is logged (a
// variable for tests).
var restartLogMin int64 = 100

// replicaCurrent counts one of those that became current, and logs once
// every replica started so far is current.
func (p *restartProgress) replicaCurrent(s *Server) {
	cur := p.current.Add(1)
	if all := p.started.Load(); cur == all && all >= restartLogMin {
		s.Noticef("JetStream cluster: %d replicas current %v after the server's start "+
			"(%d raft messages so far came for groups not running here)", all,
			s.clock.Since(s.start).Round(time.Millisecond), s.raft.notRunning.Load())
	}
}
