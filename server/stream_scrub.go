package server

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/internal/store"
)

// The background scrub (issue 19; ARCHITECTURE.md "Repair of a damaged
// replica"): every scrub interval one goroutine per server re-reads the
// sealed block files of every file stream, at most scrub rate bytes a
// second (internal/store ScrubNext: the active block is never read, and
// nothing in the store changes). A replica of a replicated stream that
// turns out damaged is started again as a server start would start it:
// its store is rebuilt from its raft log, and a linked snapshot that fails
// its checksums makes it discard its state and catch up from the other
// replicas (stream_repair.go). A stream on one server has no peer to
// repair from: the damage is logged and /healthz reports it. The scrub
// touches no raft group, so quiescent groups stay asleep.

const (
	defaultScrubRate     = 4 << 20 // bytes a second
	defaultScrubInterval = time.Hour
	// scrubPaceMin is the least wait the pacing sleeps; shorter debts add up.
	scrubPaceMin = 20 * time.Millisecond
)

// scrubRate is the scrub's read rate in bytes a second; 0: no scrub.
func (o *Options) scrubRate() int64 {
	switch {
	case o.JetStreamScrubRate < 0:
		return 0
	case o.JetStreamScrubRate == 0:
		return defaultScrubRate
	}
	return o.JetStreamScrubRate
}

// scrubInterval is the time from the start of one pass to the next.
func (o *Options) scrubInterval() time.Duration {
	if o.JetStreamScrubInterval <= 0 {
		return defaultScrubInterval
	}
	return o.JetStreamScrubInterval
}

// scrubber is the scrub goroutine's state; only that goroutine touches it
// (done is closed when it ends).
type scrubber struct {
	js       *jetStream
	rate     int64
	interval time.Duration
	debt     time.Duration // read time owed to the rate, not yet waited
	stop     chan struct{} // closed by stopScrub (JetStream disabled or shut down)
	done     chan struct{}
	passes   atomic.Uint64 // passes finished
	waits    atomic.Uint64 // waits begun on the clock (for tests)
}

// startScrub starts the scrub goroutine unless the rate is 0.
func (js *jetStream) startScrub() {
	o := js.srv.getOpts()
	if o.scrubRate() == 0 {
		return
	}
	sc := &scrubber{js: js, rate: o.scrubRate(), interval: o.scrubInterval(), stop: make(chan struct{}), done: make(chan struct{})}
	js.scrub.Store(sc)
	js.srv.wg.Add(1)
	go func() {
		defer js.srv.wg.Done()
		defer close(sc.done)
		sc.run()
	}()
}

// stopScrub tells the scrub goroutine to end and waits for it; a repair
// it started finishes first. It runs when JetStream stops, which is not
// always a server shutdown (DisableJetStream), so quit alone is not enough.
func (js *jetStream) stopScrub() {
	if sc := js.scrub.Swap(nil); sc != nil {
		close(sc.stop)
		<-sc.done
	}
}

// run makes a pass every interval, from the start of one to the start of
// the next (at once when a pass took longer); the first one interval
// after the server started.
func (sc *scrubber) run() {
	s := sc.js.srv
	next := s.clock.Now().Add(sc.interval)
	for {
		if !sc.wait(max(s.clock.Until(next), 0)) {
			return
		}
		start := s.clock.Now()
		next = start.Add(sc.interval)
		if !sc.pass() {
			return
		}
		s.Debugf("JetStream scrub: pass finished in %v", s.clock.Since(start))
	}
}

// wait sleeps d on the server's clock; false when the server shuts down.
func (sc *scrubber) wait(d time.Duration) bool {
	s := sc.js.srv
	t := s.clock.NewTimer(d)
	defer t.Stop()
	sc.waits.Add(1)
	select {
	case <-t.C():
		return true
	case <-s.quit:
		return false
	case <-sc.stop:
		return false
	}
}

// pace is called after n bytes were read: it waits what the rate asks.
func (sc *scrubber) pace(n int) bool {
	sc.debt += time.Duration(int64(n) * int64(time.Second) / sc.rate)
	if sc.debt < scrubPaceMin {
		select {
		case <-sc.js.srv.quit:
			return false
		case <-sc.stop:
			return false
		default:
			return true
		}
	}
	d := sc.debt
	sc.debt = 0
	return sc.wait(d)
}

// pass scrubs every file stream once; false when the server shuts down.
func (sc *scrubber) pass() bool {
	for _, jsa := range sc.js.accountList() {
		for _, mset := range jsa.streamList() {
			if !sc.scrubStream(mset) {
				return false
			}
		}
	}
	sc.passes.Add(1)
	return true
}

// scrubStream checks every sealed block of mset's store and acts on the
// damage found.
func (sc *scrubber) scrubStream(mset *stream) bool {
	st, ok := mset.st().(store.Scrubber)
	if !ok {
		return true
	}
	var missing []uint64
	lost := 0
	for from := uint32(0); ; {
		res, err := st.ScrubNext(from, sc.pace)
		if err != nil { // stopped
			return false
		}
		lost = res.Lost
		if res.Done {
			break
		}
		missing = append(missing, res.Missing...)
		from = res.Block + 1
	}
	mset.scrubbed(missing, lost)
	return true
}

// scrubbed records what a scrub pass found in the stream (missing: live
// messages without a valid record; lost: messages the store dropped
// earlier, when a read found them damaged) and repairs or reports it.
func (mset *stream) scrubbed(missing []uint64, lost int) {
	s := mset.jsa.js.srv
	mset.scrubLost.Store(int64(len(missing) + lost))
	if len(missing)+lost == 0 {
		return
	}
	what := fmt.Sprintf("JetStream stream '%s > %s': the scrub found %d messages without a valid record", mset.jsa.acc.Name, mset.name, len(missing))
	if len(missing) > 0 {
		what += fmt.Sprintf(" (first %d)", missing[0])
	}
	if lost > 0 {
		what += fmt.Sprintf(", and reads had found %d damaged before", lost)
	}
	if !mset.repairable() {
		s.Errorf("%s; the stream has no other replica to repair them from", what)
		return
	}
	s.Warnf("%s; restarting the replica to repair it", what)
	if _, err := mset.jsa.restartReplica(mset); err != nil {
		s.Errorf("JetStream stream '%s > %s': restarting the damaged replica: %v", mset.jsa.acc.Name, mset.name, err)
	}
}

// repairable reports whether the stream has other replicas to repair
// this one from. An R1 stream of a cluster is replicated through a group
// of one: restarting it would discard its good messages with the damaged
// ones and leave nothing to catch up from.
func (mset *stream) repairable() bool {
	jc := mset.jsa.js.cluster
	if !mset.replicated || jc == nil {
		return false
	}
	sa := jc.assignment(mset.jsa.acc.Name, mset.name)
	return sa != nil && len(sa.Peers) > 1
}

// restartReplica stops the replica mset and starts it again as at server
// start: its store is rebuilt from the group's log and verified, and
// damage there makes it catch up from the other replicas. A damaged
// replica (the scrub) and a halted one (stream_halt_restart.go) restart
// so.
func (jsa *jsAccount) restartReplica(mset *stream) (*stream, error) {
	jc := jsa.js.cluster
	if jc == nil {
		return nil, nil
	}
	jsa.mu.Lock()
	sa := jc.assignment(jsa.acc.Name, mset.name)
	if jsa.streams[mset.name] != mset || sa == nil || !jc.isPeer(sa) {
		jsa.mu.Unlock()
		return nil, nil
	}
	delete(jsa.streams, mset.name)
	jsa.mu.Unlock()
	jsa.stopReplicaOf(mset, false, nil)
	return jsa.startReplayed(sa)
}

// startReplayed starts this server's replica of sa from its log (a
// restart, or a replica whose restart failed started again).
func (jsa *jsAccount) startReplayed(sa *streamAssignment) (*stream, error) {
	jc := jsa.js.cluster
	restarted, err := jsa.startReplica(sa, startReplayed)
	if err != nil {
		return nil, err
	}
	// The stream may have been deleted, or moved off this server, while
	// the replica was out of the account's streams (the meta apply found
	// nothing to stop then): stop the restarted one as it would have.
	switch now := jc.assignment(jsa.acc.Name, sa.Config.Name); {
	case now == nil:
		jsa.stopReplica(sa.Config.Name, true, sa)
		return nil, nil
	case now.Created != sa.Created || !jc.isPeer(now):
		jsa.stopReplicaIf(restarted)
		return nil, nil
	}
	return restarted, nil
}

// scrubDamage is /healthz's error for a stream without other replicas
// whose last scrub found messages without a valid record; "" when none.
func (js *jetStream) scrubDamage() string {
	for _, jsa := range js.accountList() {
		for _, mset := range jsa.streamList() {
			if n := mset.scrubLost.Load(); n > 0 && !mset.repairable() {
				return fmt.Sprintf("JetStream stream '%s > %s' is damaged: %d messages without a valid record", jsa.acc.Name, mset.name, n)
			}
		}
	}
	return ""
}
