package server

// A group halts on its own goroutine: an event's error (a failed write of
// its log, its state machine's apply) or a panic (raft_panic.go) ends its
// loop, which fails the group (raftGroup.fail). Code outside the group
// that finds its replica cannot go on (a stream's periodic store sync
// failed: stream_store_failure.go) asks for the same with haltWith: the
// loop takes the request as one of its events, logs the request's note
// (one line: an expected failure such as a failing disk, not a bug, so no
// stack) and fails the group with its error. A hosted group's host takes
// the request from runControls as an event's error (raft_host.go).

// groupHalt is a halt asked of a group: err is its failure (what
// /healthz reports), note the line logged when the group halts.
type groupHalt struct {
	err  error
	note string
}

// haltWith asks the group to halt with err, logging note when it does
// (any goroutine; it never waits). One request waits at a time: another
// one meanwhile is dropped, the group halting anyway.
func (g *raftGroup) haltWith(err error, note string) {
	select {
	case g.halts <- groupHalt{err: err, note: note}:
	default:
	}
}

// haltAsked halts the group as h asks (group goroutine only).
func (g *raftGroup) haltAsked(h groupHalt) {
	g.srv.Errorf("%s", h.note)
	g.failQuiet(h.err)
}
