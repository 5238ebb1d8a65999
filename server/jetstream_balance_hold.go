package server

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// The leader balancer holds while a server catches up after a restart.
// A server restarted among 10,000 streams leads nothing at first, and the
// others' balancers handed it its share (3,333 leaderships) while it was
// still starting and catching up its groups: each transfer an election
// the restarted server had to win and a group it had to lead, on a machine
// already saturated by the restart. On a busy machine the transfers and
// the elections they set off went on for a minute, 14,000 leaderships
// moved (issue 20). So no transfer goes toward or away from a server that
// is still catching up: it says so every leaderBalanceEvery on
// $JSC.CATCHUP ("<server> 1"), and "<server> 0" once it is current in
// every replica it started from what it held (restartProgress); the
// others leave it out as a target until it said 0 or catchUpForget passed
// without word (an older server never says anything: no hold), and its
// own balancer moves nothing meanwhile. A server whose route came up
// within catchUpForget is held too until it says it is done: its first
// word comes up to a round after the route, and the route's coming makes
// the others' rounds due at once. A change of who is held makes a
// round due, so the balancer resumes at once.

const catchUpSubject = "$JSC.CATCHUP"

var (
	// catchUpForget is how long a server's "catching up" holds without
	// being said again (it may have died).
	catchUpForget = 3 * leaderBalanceEvery
	// restartHoldFirst bounds the hold of a server that held meta state
	// at its start and has not started a replica from it yet (its meta
	// group replays); restartHoldMax bounds any hold (a replica that
	// never becomes current must not stop the balancer for good).
	restartHoldFirst = 10 * time.Second
	restartHoldMax   = 2 * time.Minute
)

// catchUpView is what the balancer knows of servers catching up.
type catchUpView struct {
	// peers maps each other server that spoke on $JSC.CATCHUP to its
	// last word; replaced whole (the route read loops write it).
	peers atomic.Pointer[map[string]catchUpWord]
	said  bool // this server said it is catching up (balanceLoop only)
}

// catchUpWord is what a server said last, and when.
type catchUpWord struct {
	at time.Time
	on bool
}

// catchUpPinned makes a server catch up for as long as it says (tests).
var catchUpPinned func(name string) bool

// catchingUp reports whether this server is still catching up after a
// restart: it started replicas from what it held and some are not current
// yet, or it held meta state at its start and started none yet.
func (jc *jsCluster) catchingUp() bool {
	s := jc.js.srv
	if catchUpPinned != nil && catchUpPinned(s.Name()) {
		return true
	}
	since := s.clock.Since(s.start)
	p := &jc.restart
	if started := p.started.Load(); started > 0 {
		return p.current.Load() < started && since < restartHoldMax
	}
	return p.heldAtStart && since < restartHoldFirst
}

// sayCatchingUp tells the other servers whether this one catches up:
// every round while it does, once when it stopped.
func (jc *jsCluster) sayCatchingUp() {
	v := &jc.catchUp
	now := jc.catchingUp()
	if !now && !v.said {
		return
	}
	v.said = now
	s := jc.js.srv
	if sys := s.SystemAccount(); sys != nil {
		flag := "0"
		if now {
			flag = "1"
		}
		s.deliver(nil, sys, catchUpSubject, "", nil, []byte(s.Name()+" "+flag))
	}
}

// catchUpHeard handles "<server> 1|0" on $JSC.CATCHUP, taken only from
// the route of the server it names, of a protocol that keeps its clients
// off the subject (cluster_only.go): anyone else could hold the balancer.
func (jc *jsCluster) catchUpHeard(_ *subscription, c *client, _ *Account, _, _ string, _, msg []byte) {
	name, flag, ok := strings.Cut(string(msg), " ")
	if !ok || name == "" || name == jc.js.srv.Name() || flag != "0" && flag != "1" {
		return
	}
	if c == nil || c.route == nil || c.route.remote.Name != name || c.route.remote.Proto < routeProtoCatchUp {
		jc.js.srv.refuseClusterOnly(catchUpFrom(c), catchUpSubject)
		return
	}
	word := catchUpWord{at: time.Now(), on: flag == "1"}
	v := &jc.catchUp
	for {
		old := v.peers.Load()
		next := map[string]catchUpWord{name: word}
		if old != nil {
			for k, w := range *old {
				if k != name {
					next[k] = w
				}
			}
		}
		if v.peers.CompareAndSwap(old, &next) {
			return
		}
	}
}

// catchUpFrom names who sent a word on $JSC.CATCHUP, for the log.
func catchUpFrom(c *client) string {
	switch {
	case c == nil:
		return "this server"
	case c.route == nil:
		return c.String()
	}
	return fmt.Sprintf("the route of %s (route protocol %d)", c.route.remote.Name, c.route.remote.Proto)
}

// heldServers lists the other servers the balancer leaves alone now,
// sorted: those that said they catch up within catchUpForget, and those
// whose route came up less than catchUpForget ago and that have not said
// since that they are done (a restarted server's route comes before its
// first word). Times are wall clock, as the routes' (raft_live.go).
func (jc *jsCluster) heldServers() []string {
	now := time.Now()
	var words map[string]catchUpWord
	if p := jc.catchUp.peers.Load(); p != nil {
		words = *p
	}
	var out []string
	for _, r := range jc.js.srv.routeList() {
		name, up := r.remote.Name, r.c.start
		w, spoke := words[name]
		switch {
		case spoke && w.on && now.Sub(w.at) < catchUpForget:
		case now.Sub(up) < catchUpForget && !(spoke && !w.on && w.at.After(up)):
		default:
			continue
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// holdFingerprint names what the balancer holds for: this server catching
// up, and the others that are (a change makes a round due).
func (jc *jsCluster) holdFingerprint() string {
	f := strings.Join(jc.heldServers(), ",")
	if jc.catchingUp() {
		f = "self;" + f
	}
	return f
}
