package server

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/internal/clock"
)

// A stream replica whose raft group halted (raft_panic.go: a panic in its
// log, store or state machine, or a failed write) is restarted by the
// server itself, as a server start would start it: the group is stopped
// and its log closed, then the replica is started again from disk (its
// store rebuilt from the log; a log that fails its checks is discarded
// and the replica catches up from the other replicas, stream_repair.go).
// One goroutine per clustered server waits out a backoff first (1 s, then
// 2 s, 4 s) and restarts a replica at most haltRestartMax times; a replica
// that halts again after that stays halted and /healthz reports it until
// the process restarts. A replica that ran haltRestartForgive since its
// last restart before it halted again counts from zero.

const (
	haltRestartMax     = 3
	haltRestartForgive = 10 * time.Minute
	haltQueueMax       = 64 // halts waiting for the goroutine; more are dropped (they stay halted)
)

// haltRestartFirst is the first backoff (a variable for tests).
var haltRestartFirst = time.Second

// haltRestarts is the restart goroutine's state: halts and stop are its
// inputs; tries and pending are touched by that goroutine only.
type haltRestarts struct {
	js      *jetStream
	halts   chan *stream
	stop    chan struct{}
	done    chan struct{}
	tries   map[string]haltTries // by "account > stream"
	pending []pendingRestart
	// restarted counts the replicas restarted, gaveUp the halts left
	// alone after haltRestartMax restarts (tests).
	restarted, gaveUp atomic.Uint64
	// failed is /healthz's error once a restart could not start its
	// replica (nil: none did).
	failed atomic.Pointer[string]
}

type haltTries struct {
	n    int       // restarts since the count was last forgiven
	last time.Time // when the last one was due
}

type pendingRestart struct {
	mset *stream
	due  time.Time
}

// startHaltRestarts starts the restart goroutine (clustered servers
// whose groups the server runs itself: a raft host restarts nothing).
func (js *jetStream) startHaltRestarts() {
	if js.cluster == nil || js.srv.getOpts().raftHost != nil {
		return
	}
	r := &haltRestarts{js: js, halts: make(chan *stream, haltQueueMax), stop: make(chan struct{}),
		done: make(chan struct{}), tries: map[string]haltTries{}}
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
	key := mset.jsa.acc.Name + " > " + mset.name
	now := s.clock.Now()
	for k, t := range r.tries { // forgiven counts go: the map holds recent halts only
		if now.Sub(t.last) > haltRestartForgive {
			delete(r.tries, k)
		}
	}
	t := r.tries[key]
	if now.Sub(t.last) > haltRestartForgive {
		t.n = 0
	}
	if t.n >= haltRestartMax {
		s.Errorf("JetStream stream '%s': its replica halted again after %d restarts: it stays halted until the server restarts", key, t.n)
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

// restartDue restarts the replicas whose backoff is over.
func (r *haltRestarts) restartDue() {
	now := r.js.srv.clock.Now()
	for len(r.pending) > 0 && !r.pending[0].due.After(now) {
		mset := r.pending[0].mset
		r.pending = r.pending[1:]
		if err := mset.jsa.restartHalted(mset); err != nil {
			msg := fmt.Sprintf("JetStream stream '%s > %s': restarting its halted replica failed: %v", mset.jsa.acc.Name, mset.name, err)
			r.failed.Store(&msg)
			r.js.srv.Errorf("%s", msg)
			continue
		}
		r.restarted.Add(1)
	}
}

// restartHalted restarts mset if its group is still the halted one (the
// stream may have been stopped, deleted or restarted meanwhile).
func (jsa *jsAccount) restartHalted(mset *stream) error {
	mset.mu.Lock()
	g, closed := mset.group, mset.closed
	mset.mu.Unlock()
	if closed || g == nil || g.healthy() == nil {
		return nil
	}
	return jsa.restartReplica(mset)
}

// haltRestartFailed is /healthz's error for a halted replica the server
// could not start again; "" when none.
func (js *jetStream) haltRestartFailed() string {
	if r := js.restarts.Load(); r != nil {
		if msg := r.failed.Load(); msg != nil {
			return *msg
		}
	}
	return ""
}
