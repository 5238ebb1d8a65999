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
	p.logIfAllCurrent(s, p.current.Add(1), p.started.Load())
}

// replicaStopped uncounts one of those that stopped before it became
// current: its stream was deleted, or it was removed from the placement,
// while the server was down, and the server learned it catching up; or
// its group halted (a restart of it is counted anew). It
// never becomes current, and the balancer's hold (jetstream_balance_hold.go)
// would otherwise last restartHoldMax.
func (p *restartProgress) replicaStopped(s *Server) {
	all := p.started.Add(-1)
	p.logIfAllCurrent(s, p.current.Load(), all)
}

// logIfAllCurrent logs once cur replicas of all started are current.
func (p *restartProgress) logIfAllCurrent(s *Server, cur, all int64) {
	if cur == all && all >= restartLogMin {
		s.Noticef("JetStream cluster: %d replicas current %v after the server's start "+
			"(%d raft messages so far came for groups not running here)", all,
			s.clock.Since(s.start).Round(time.Millisecond), s.raft.notRunning.Load())
	}
}
