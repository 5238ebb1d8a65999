package server

import (
	"testing"
	"time"
)

// wedgeScanAt runs the raft clock's duties of a tick at now that came late
// by late: the lateness is noted (checkLiveness's note), then the wedge
// scan runs, as in runRaftClock. It reports whether g was found wedged.
func wedgeScanAt(s *Server, g *raftGroup, now time.Time, late time.Duration) bool {
	s.raftClock.lag.note(now.UnixNano(), int64(late))
	s.checkWedged(now)
	s.raft.mu.Lock()
	defer s.raft.mu.Unlock()
	return g.wd.told
}

// A leader's group inside one pass when its whole process was paused
// (SIGSTOP, a frozen VM) for longer than raftWedgeAfter is not wedged: at
// the first tick after the resume, the raft clock comes late by the pause
// and the scan may run before the group's goroutine ends its pass. Only
// the time this server's clock ticked on time counts (raft_live_lag.go);
// a pass that stays stuck that long after the resume is still deposed.
// Without the discount the first scan after the pause deposed the group.
func TestRaftWedgeScanDiscountsOwnPause(t *testing.T) {
	s, g := wedgeScanServer(t)

	now := time.Unix(1_000_000, 0)
	g.enter() // the pass starts
	for range 2 {
		if wedgeScanAt(s, g, now, 0) {
			t.Fatal("a pass seen for less than raftWedgeAfter was deemed wedged")
		}
		now = now.Add(raftWedgeScanEvery)
	}
	pause := 10 * time.Second
	now = now.Add(pause)
	if wedgeScanAt(s, g, now, pause) {
		t.Fatalf("a pass in progress while the process was paused %v deemed wedged at the first tick after", pause)
	}
	// On-time scans go on: the pass is deposed once stuck raftWedgeAfter
	// on this server's clock (it did not end).
	onTime := raftWedgeScanEvery
	for stuck := 2 * onTime; stuck+onTime < raftWedgeAfter; stuck += onTime {
		now = now.Add(onTime)
		if wedgeScanAt(s, g, now, 0) {
			t.Fatalf("deposed after %v on time", stuck+onTime)
		}
	}
	now = now.Add(onTime)
	if !wedgeScanAt(s, g, now, 0) {
		t.Fatal("a pass stuck past raftWedgeAfter of on-time ticks after the pause was not deemed wedged")
	}
}

// Without a pause, a pass stuck raftWedgeAfter is deemed wedged at the
// first scan past it, as before.
func TestRaftWedgeScanOnTime(t *testing.T) {
	s, g := wedgeScanServer(t)

	now := time.Unix(1_000_000, 0)
	g.enter()
	start := now
	for !wedgeScanAt(s, g, now, 0) {
		if now.Sub(start) > raftWedgeAfter {
			t.Fatalf("a pass stuck %v on time not deemed wedged", now.Sub(start))
		}
		now = now.Add(raftWedgeScanEvery)
	}
	if now.Sub(start) < raftWedgeAfter {
		t.Fatalf("deemed wedged after %v", now.Sub(start))
	}
}

// An idle server (no group inside a pass) skips the walk over its groups:
// with 10,000 streams the walk every 600 ms was a third of the idle
// cluster's CPU. A pass that starts is watched from the next scan on.
// Without the skip the first scan below walked the group (its watch got
// a time).
func TestRaftWedgeScanSkipsIdleServer(t *testing.T) {
	s, g := wedgeScanServer(t)

	now := time.Unix(1_000_000, 0)
	wedgeScanAt(s, g, now, 0)
	if !g.wd.since.IsZero() {
		t.Fatal("the scan walked the groups of a server with no group inside a pass")
	}
	g.enter()
	now = now.Add(raftWedgeScanEvery)
	wedgeScanAt(s, g, now, 0)
	if !g.wd.since.Equal(now) {
		t.Fatalf("a group inside a pass not watched from the next scan: since %v, want %v", g.wd.since, now)
	}
	g.leave()
	if s.raft.inPass.Load() != 0 {
		t.Fatalf("inPass %d after the pass ended", s.raft.inPass.Load())
	}
}

// wedgeScanServer is a bare server with one leading group "G" for the
// wedge scan (its state machine is deposable; depose finds no leading
// soft state, so it only counts).
func wedgeScanServer(t *testing.T) (*Server, *raftGroup) {
	s := &Server{}
	g := &raftGroup{name: "G", srv: s, sm: (*streamSM)(nil)}
	g.leads.Store(true)
	s.raft.groups = map[string]*raftGroup{g.name: g}
	t.Cleanup(s.wg.Wait) // depose goroutines
	return s, g
}
