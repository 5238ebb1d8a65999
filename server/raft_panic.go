package server

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// A panic in a raft group (a bug in its log, its state machine or the
// core) must not end the process nor keep the server from shutting down:
// it halts that group only (raftGroup.fail: reported unhealthy, its
// proposals refused) and the group's goroutine ends as on Shutdown (a
// stream's replica is then restarted: stream_halt_restart.go). The
// driver (internal/raft) recovers the panics of the calls it makes; the
// group loop and the goroutines a group starts to sync its log recover
// here. What the panicking code held is released by its own defers (the
// WAL releases its mutex and turns read-only, internal/wal unlock).

// haltOnPanic turns a panic into the error of a halted group.
func haltOnPanic(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("raft: group halted: %v\n%s", p, debug.Stack())
	}
}

// recoveredSync runs sync (on a goroutine a group started), a panic
// reported as its error.
func recoveredSync(sync func() error) (err error) {
	defer haltOnPanic(&err)
	return sync()
}

// failOnPanic halts the group on a panic of its loop (deferred by run).
func (g *raftGroup) failOnPanic() {
	if p := recover(); p != nil {
		g.fail(fmt.Errorf("raft: group halted: %v\n%s", p, debug.Stack()))
	}
}

// haltedGroup names a group of this server that halted (a panic, a
// failed write) and why, in one line; "" when none did. /healthz
// reports it: the server runs on, but that replica serves nothing until
// it is restarted (a stream's is, stream_halt_restart.go, a bounded
// number of times; the meta group's is not).
func (s *Server) haltedGroup() string {
	for _, g := range s.raftGroupList() {
		if err := g.healthy(); err != nil {
			why, _, _ := strings.Cut(err.Error(), "\n")
			return fmt.Sprintf("JetStream raft group %q halted: %v", g.name, why)
		}
	}
	return ""
}

// haltedGroups counts the server's halted groups (/jsz).
func (s *Server) haltedGroups() int {
	n := 0
	for _, g := range s.raftGroupList() {
		if g.healthy() != nil {
			n++
		}
	}
	return n
}

// raftGroupList is a copy of the server's groups.
func (s *Server) raftGroupList() []*raftGroup {
	s.raft.mu.Lock()
	defer s.raft.mu.Unlock()
	groups := make([]*raftGroup, 0, len(s.raft.groups))
	for _, g := range s.raft.groups {
		groups = append(groups, g)
	}
	return groups
}
