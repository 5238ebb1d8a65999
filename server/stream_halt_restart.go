package server

import (
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/internal/clock"
)

// A stream replica whose raft group halted (raft_panic.go: a panic in its
// log, store or state machine, or a failed write; stream_store_failure.go:
// a store write error) is restarted by the server itself, as a server
// start would start it: the group is stopped and its log closed, then the
// replica is started again from disk (its store rebuilt from the log; a
// log that fails its checks is discarded and the replica catches up from
// the other replicas, stream_repair.go). One goroutine per clustered
// server waits out a backoff first (1 s, then 2 s, 4 s) and restarts a
// replica at most haltRestartMax times; a replica that halts again after
// that stays halted, and /healthz reports it, until the operator acts:
// an update of the stream ($JS.API.STREAM.UPDATE, even with its config
// unchanged) or a leader stepdown of it restarts every halted replica of
// the stream at once with its count at zero (stream_halt_revive.go), and
// removing the replica from the placement or deleting the stream stops
// it. A replica that ran haltRestartForgive since its last restart before
// it halted again counts from zero.
//
// The counts concern one replica's life: the replica a restart started
// continues its predecessor's count, any other (the stream deleted and
// made again, the replica removed and added again, a scrub's repair)
// counts from zero, and a count whose replica stopped is dropped. A
// restart that could not start its replica leaves none: /healthz and /jsz
// report it while the stream is still placed here without a replica
// (restartFailure), and forget it once the stream is deleted or moved.

const (
	haltRestartMax     = 3
	haltRestartForgive = 10 * time.Minute
	haltQueueMax       = 64 // halts waiting for the goroutine; more are dropped (they stay halted)
)

// haltRestartFirst is the first backoff (a variable for tests).
var haltRestartFirst = time.Second

// haltRestarts is the restart goroutine's state: halts, revives and stop
// are its inputs; tries and pending are touched by that goroutine only.
type haltRestarts struct {
	js      *jetStream
	halts   chan *stream
	revives chan reviveReq // stream_halt_revive.go
	stop    chan struct{}
	done    chan struct{}
	tries   map[string]haltTries // by "account > stream"
	pending []pendingRestart
	// restarted counts the replicas restarted after a halt, gaveUp the
	// halts left alone after haltRestartMax restarts, revived the
	// replicas an operator's call restarted (tests).
	restarted, gaveUp, revived atomic.Uint64
	// failed lists the replicas a restart could not start (written by
	// the goroutine, a new slice each time; read by /healthz and /jsz).
	failed atomic.Pointer[[]restartFailure]
}

type haltTries struct {
	n    int       // restarts since the count was last forgiven
	last time.Time // when the last one was due
	mset *stream   // the replica counted: the halted one, then the one its restart started
}

type pendingRestart struct {
	mset *stream
	due  time.Time
}

// restartFailure is a replica whose restart failed: the stream (by its
// creation time, so a stream made again under the name is another) and
// the error.
type restartFailure struct {
	account, stream string
	created         time.Time
	msg             string
}

func haltKey(account, stream string) string { return account + " > " + stream }

// startHaltRestarts starts the restart goroutine (clustered servers
// whose groups the server runs itself: a raft host restarts nothing).
func (js *jetStream) startHaltRestarts() {
	if js.cluster == nil || js.srv.getOpts().raftHost != nil {
		return
	}
	r := &haltRestarts{js: js, halts: make(chan *stream, haltQueueMax), revives: make(chan reviveReq, haltQueueMax),
		stop: make(chan struct{}), done: make(chan struct{}), tries: map[string]haltTries{}}
	js.restarts.Store(r)
	js.srv.wg.Add(1)
	go func() {
		defer js.srv.wg.Done()
		defer close(r.done)
		r.run()
	}()
}

// stopHaltRestarts ends the goroutine and waits for it (a restart under
// way finishes first): before JetStream stops its streams.
func (js *jetStream) stopHaltRestarts() {
	if r := js.restarts.Swap(nil); r != nil {
		close(r.stop)
		<-r.done
	}
}

// halted is told (on the group goroutine) that mset's group halted.
func (sm *streamSM) halted() {
	sm.stopped() // it may never run again (jetstream_restart_progress.go)
	mset := sm.mset
	r := mset.jsa.js.restarts.Load()
	if r == nil {
		return
	}
	select {
	case r.halts <- mset:
	default:
		mset.jsa.js.srv.Errorf("JetStream stream '%s > %s': too many replicas halted at once: this one is not restarted", mset.jsa.acc.Name, mset.name)
	}
}

func (r *haltRestarts) run() {
	s := r.js.srv
	for {
		var due <-chan time.Time
		var t clock.Timer
		if len(r.pending) > 0 {
			t = s.clock.NewTimer(max(s.clock.Until(r.pending[0].due), 0))
			due = t.C()
		}
		select {
		case mset := <-r.halts:
			r.schedule(mset)
		case req := <-r.revives:
			r.revive(req)
		case <-due:
			r.restartDue()
		case <-r.stop:
		}
		if t != nil {
			t.Stop()
		}
		select {
		case <-r.stop:
			return
		default:
		}
	}
}

// schedule decides whether mset is restarted and when.
func (r *haltRestarts) schedule(mset *stream) {
	s := r.js.srv
	key := haltKey(mset.jsa.acc.Name, mset.name)
	now := s.clock.Now()
	r.prune(now)
	t := r.tries[key]
	if t.mset != mset || now.Sub(t.last) > haltRestartForgive {
		t = haltTries{} // another replica's count, or forgiven
	}
	t.mset = mset
	if t.n >= haltRestartMax {
		r.tries[key] = t
		s.Errorf("JetStream stream '%s': its replica halted again after %d restarts: it stays halted until the stream is updated, its leader steps down, or the server restarts", key, t.n)
		r.gaveUp.Add(1)
		return
	}
	wait := haltRestartFirst << t.n
	t.n++
	t.last = now.Add(wait)
	r.tries[key] = t
	s.Warnf("JetStream stream '%s': its replica halted; restarting it in %v (restart %d of %d)", key, wait, t.n, haltRestartMax)
	p := pendingRestart{mset: mset, due: t.last}
	i := len(r.pending)
	for i > 0 && r.pending[i-1].due.After(p.due) {
		i--
	}
	r.pending = append(r.pending[:i], append([]pendingRestart{p}, r.pending[i:]...)...)
}

// prune drops the counts forgiven and those whose replica stopped (its
// stream deleted, the replica removed or replaced), and the failures
// that no longer hold: the map and the list keep live replicas only.
func (r *haltRestarts) prune(now time.Time) {
	for k, t := range r.tries {
		if now.Sub(t.last) > haltRestartForgive || t.mset != nil && t.mset.isClosed() {
			delete(r.tries, k)
		}
	}
	if f := r.failures(); len(f) > 0 {
		r.setFailures(slices.DeleteFunc(slices.Clone(f), func(f restartFailure) bool { return !r.js.stillFailed(f) }))
	}
}

// restartDue restarts the replicas whose backoff is over.
func (r *haltRestarts) restartDue() {
	now := r.js.srv.clock.Now()
	for len(r.pending) > 0 && !r.pending[0].due.After(now) {
		mset := r.pending[0].mset
		r.pending = r.pending[1:]
		restarted, err := mset.jsa.restartHalted(mset)
		if err != nil {
			r.restartFailed(mset, err)
			continue
		}
		if restarted == nil {
			continue // stopped, deleted or restarted meanwhile
		}
		key := haltKey(mset.jsa.acc.Name, mset.name)
		if t, ok := r.tries[key]; ok && t.mset == mset {
			t.mset = restarted // the restarted replica continues the count
			r.tries[key] = t
		}
		r.restarted.Add(1)
	}
}

// restartFailed records that mset's restart left no replica.
func (r *haltRestarts) restartFailed(mset *stream, err error) {
	msg := fmt.Sprintf("JetStream stream '%s > %s': restarting its halted replica failed: %v", mset.jsa.acc.Name, mset.name, err)
	r.js.srv.Errorf("%s", msg)
	f := restartFailure{account: mset.jsa.acc.Name, stream: mset.name, created: mset.created, msg: msg}
	r.setFailures(append(r.dropFailure(f.account, f.stream), f))
}

// restartHalted restarts mset if its group is still the halted one (the
// stream may have been stopped, deleted or restarted meanwhile); the
// replica started, nil when none was.
func (jsa *jsAccount) restartHalted(mset *stream) (*stream, error) {
	mset.mu.Lock()
	g, closed := mset.group, mset.closed
	mset.mu.Unlock()
	if closed || g == nil || g.healthy() == nil {
		return nil, nil
	}
	return jsa.restartReplica(mset)
}

// isClosed reports whether mset was stopped.
func (mset *stream) isClosed() bool {
	mset.mu.Lock()
	defer mset.mu.Unlock()
	return mset.closed
}
