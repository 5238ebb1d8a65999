package server

import (
	"slices"
)

// An operator's way back for a replica left halted after haltRestartMax
// restarts, or left without a replica by a restart that failed
// (stream_halt_restart.go), without restarting the process, as
// nats-server's operators do it: an update of the stream
// ($JS.API.STREAM.UPDATE, its config unchanged is enough: `nats stream
// edit`), which every server applies from the meta log (nats-server
// starts a stream's raft group again when an assignment finds it closed),
// or a stream leader stepdown, a request every server receives. Each
// server with such a replica of the stream restarts it at once, its count
// at zero. Removing the replica from the placement (peer-remove) stops it
// and forgets it; adding it back starts a new one.

// reviveReq asks the restart goroutine to restart a stream's replica now.
type reviveReq struct{ account, stream string }

// reviveHalted asks for this server's replica of account's stream to be
// restarted now when it is halted or its restart failed (nothing when it
// runs, or when the server restarts nothing: a single server, a raft
// host). Called by the meta apply and the API dispatch: cheap, and the
// restart runs on the restart goroutine.
func (js *jetStream) reviveHalted(account, stream string) {
	r := js.restarts.Load()
	jsa := js.account(account)
	if r == nil || jsa == nil {
		return
	}
	if mset := jsa.lookup(stream); mset != nil {
		if g := mset.groupNow(); g == nil || g.healthy() == nil {
			return
		}
	} else if !slices.ContainsFunc(r.failures(), func(f restartFailure) bool { return f.account == account && f.stream == stream }) {
		return
	}
	select {
	case r.revives <- reviveReq{account, stream}:
	default:
		js.srv.Errorf("JetStream stream '%s': too many replicas to restart at once: this one is not restarted now", haltKey(account, stream))
	}
}

// revive restarts the replica req names now, with its count at zero.
func (r *haltRestarts) revive(req reviveReq) {
	key := haltKey(req.account, req.stream)
	delete(r.tries, key)
	r.pending = slices.DeleteFunc(r.pending, func(p pendingRestart) bool {
		return p.mset.jsa.acc.Name == req.account && p.mset.name == req.stream
	})
	jsa := r.js.account(req.account)
	if jsa == nil {
		return
	}
	var restarted *stream
	var err error
	if mset := jsa.lookup(req.stream); mset != nil {
		restarted, err = jsa.restartHalted(mset)
		if err != nil {
			r.restartFailed(mset, err)
			return
		}
	} else if f := r.failure(req.account, req.stream); f != nil && r.js.stillFailed(*f) {
		if sa := r.js.cluster.assignment(req.account, req.stream); sa != nil {
			restarted, err = jsa.startReplayed(sa)
		}
		if err != nil {
			f.msg = "JetStream stream '" + key + "': starting its replica again failed: " + err.Error()
			r.js.srv.Errorf("%s", f.msg)
			r.setFailures(append(r.dropFailure(req.account, req.stream), *f))
			return
		}
	}
	r.setFailures(r.dropFailure(req.account, req.stream))
	if restarted != nil {
		r.js.srv.Noticef("JetStream stream '%s': its replica was restarted on request", key)
		r.revived.Add(1)
	}
}

// failures is the current list of failed restarts (do not modify).
func (r *haltRestarts) failures() []restartFailure {
	if p := r.failed.Load(); p != nil {
		return *p
	}
	return nil
}

func (r *haltRestarts) setFailures(f []restartFailure) {
	if len(f) == 0 {
		f = nil
	}
	r.failed.Store(&f)
}

// failure is a copy of the stream's failed restart, nil when none.
func (r *haltRestarts) failure(account, stream string) *restartFailure {
	for _, f := range r.failures() {
		if f.account == account && f.stream == stream {
			return &f
		}
	}
	return nil
}

// dropFailure is the list without the stream's failure (a new slice).
func (r *haltRestarts) dropFailure(account, stream string) []restartFailure {
	return slices.DeleteFunc(slices.Clone(r.failures()), func(f restartFailure) bool {
		return f.account == account && f.stream == stream
	})
}

// stillFailed reports whether f still holds: the stream it concerns
// (the same creation) is still placed on this server, which runs no
// replica of it. A stream deleted or moved away, or a replica started
// since (added back to the placement, restarted on request), ends it.
func (js *jetStream) stillFailed(f restartFailure) bool {
	jc := js.cluster
	sa := jc.assignment(f.account, f.stream)
	if sa == nil || !sa.Created.Equal(f.created) || !jc.isPeer(sa) {
		return false
	}
	jsa := js.account(f.account)
	return jsa != nil && jsa.lookup(f.stream) == nil
}

// haltRestartFailed is /healthz's error for a halted replica the server
// could not start again and that still matters; "" when none.
func (js *jetStream) haltRestartFailed() string {
	if r := js.restarts.Load(); r != nil {
		for _, f := range r.failures() {
			if js.stillFailed(f) {
				return f.msg
			}
		}
	}
	return ""
}

// restartsFailedNow counts the failed restarts that still hold (/jsz).
func (js *jetStream) restartsFailedNow() int {
	n := 0
	if r := js.restarts.Load(); r != nil {
		for _, f := range r.failures() {
			if js.stillFailed(f) {
				n++
			}
		}
	}
	return n
}
