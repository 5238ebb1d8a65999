package server

import (
	"github.com/nats-io/nats-server/v2/internal/lockorder"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/internal/clock"
	"github.com/nats-io/nats-server/v2/internal/raft"
)

// Every server keeps a map of who leads each replicated stream, so that
// exactly one server answers a stream's API requests and the server a
// client is connected to can answer "temporarily unavailable" (10008)
// when nobody leads. A leader announces itself on $JSC.LEADER.<acc>.<stream>
// with its raft term once it is ready and resigns when it stops leading;
// it refreshes its leaderships with leader lists (jetstream_leader_list.go),
// or, while an older peer needs it, per stream every leaderAnnounceEvery.
// Entries are dropped when the leader's route goes down, when a local
// replica sees a newer term with another leader, when a list of the
// leader leaves them out, and, for a leader that sends no lists, when
// they have not been refreshed for leaderForgetAfter: a stale entry can
// make requests go unanswered only for that long.

var (
	leaderAnnounceEvery = time.Second
	leaderForgetAfter   = 3 * time.Second
)

type leaderInfo struct {
	name     string
	term     uint64
	seen     time.Time
	stamp    uint64 // leaderMap.stamps when set or confirmed
	held     bool   // kept without refreshes (name sends leader lists)
	resigned bool   // name stopped leading in term: a tombstone
}

type leaderMap struct {
	mu      lockorder.Mutex[lockorder.LeaderMap]
	m       map[string]leaderInfo // "account stream" → leader
	changed chan struct{}         // closed and replaced on every change
	stamps  uint64                // counts sets, to order them with lists
	// listEnd is the stamp at the last chunk of each server's last list.
	listEnd map[string]uint64
	// reconcile holds the led streams whose membership may differ from
	// their placement, with a generation (reconcileWanted).
	reconcile map[*stream]uint64
	gen       uint64
	send      listSender // reannounce's caller only
	// announced counts this server's announcements (listDue).
	announced atomic.Uint64
}

func newLeaderMap() *leaderMap {
	return &leaderMap{m: map[string]leaderInfo{}, changed: make(chan struct{}),
		listEnd: map[string]uint64{}, reconcile: map[*stream]uint64{}}
}

func leaderKey(account, stream string) string { return account + " " + stream }

// notifyLocked wakes every waiter.
func (lm *leaderMap) notifyLocked() {
	close(lm.changed)
	lm.changed = make(chan struct{})
}

// set records name as leader in term unless a newer term is known, or
// name resigned in this term already (an announcement made just before a
// resignation can arrive after it).
func (lm *leaderMap) set(key, name string, term uint64, now time.Time) {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	if lm.setLocked(key, name, term, now, false) {
		lm.notifyLocked()
	}
}

// hold is set for a leader whose entries are kept without refreshes.
func (lm *leaderMap) hold(key, name string, term uint64, now time.Time) {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	if lm.setLocked(key, name, term, now, true) {
		lm.notifyLocked()
	}
}

// setLocked records the entry; true when waiters must hear of it.
func (lm *leaderMap) setLocked(key, name string, term uint64, now time.Time, held bool) bool {
	cur, ok := lm.m[key]
	if ok && (cur.term > term || cur.term == term && cur.resigned && cur.name == name) {
		return false
	}
	lm.stamps++
	lm.m[key] = leaderInfo{name: name, term: term, seen: now, stamp: lm.stamps, held: held}
	return !ok || cur.name != name || cur.resigned
}

// listed records a chunk of server name's leader list. At the last chunk,
// name's entries set before its previous list ended are dropped: they are
// in neither list, and an announcement sent after that list was made
// arrives after it (one route, in order).
func (lm *leaderMap) listed(name string, led []leadership, last bool, now time.Time) {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	changed := false
	for _, l := range led {
		changed = lm.setLocked(leaderKey(l.account, l.stream), name, l.term, now, true) || changed
	}
	if last {
		prev := lm.listEnd[name]
		for k, v := range lm.m {
			if v.name == name && !v.resigned && v.stamp <= prev {
				delete(lm.m, k)
				changed = true
			}
		}
		lm.stamps++
		lm.listEnd[name] = lm.stamps
	}
	if changed {
		lm.notifyLocked()
	}
}

// wantReconcile asks reannounce to reconcile the led stream's membership
// with its placement until it finds them in line (reconciled); it returns
// the wish's generation.
func (lm *leaderMap) wantReconcile(mset *stream) uint64 {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	lm.gen++
	lm.reconcile[mset] = lm.gen
	return lm.gen
}

type reconcileWish struct {
	mset *stream
	gen  uint64
}

// reconcileWanted lists the streams to reconcile now.
func (lm *leaderMap) reconcileWanted() []reconcileWish {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	out := make([]reconcileWish, 0, len(lm.reconcile))
	for mset, gen := range lm.reconcile {
		out = append(out, reconcileWish{mset, gen})
	}
	return out
}

// reconciled drops the wish gen unless a newer one came meanwhile.
func (lm *leaderMap) reconciled(mset *stream, gen uint64) {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	if gen != 0 && lm.reconcile[mset] == gen {
		delete(lm.reconcile, mset)
	}
}

// resign marks name's entry resigned if it is not newer than term.
func (lm *leaderMap) resign(key, name string, term uint64) {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	if cur, ok := lm.m[key]; !ok || cur.name == name && cur.term <= term {
		lm.m[key] = leaderInfo{name: name, term: term, resigned: true}
		lm.notifyLocked()
	}
}

// supersede drops the entry when a replica sees term with another leader.
func (lm *leaderMap) supersede(key string, lead raft.ID, term uint64) {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	if cur, ok := lm.m[key]; ok && !cur.resigned && cur.term < term && raftID(cur.name) != lead {
		delete(lm.m, key)
		lm.notifyLocked()
	}
}

func (lm *leaderMap) forget(key string) {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	delete(lm.m, key)
}

// forgetResigned forgets key's entry if it is a resignation: a new
// stream of a deleted one's name must not stay hidden behind the old
// leader's tombstone, but a leader the new group announced before this
// server applied its creation is kept.
func (lm *leaderMap) forgetResigned(key string) {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	if cur, ok := lm.m[key]; ok && cur.resigned {
		delete(lm.m, key)
	}
}

// dropServer forgets every stream led by a server whose route went down.
func (lm *leaderMap) dropServer(name string) {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	for k, v := range lm.m {
		if v.name == name {
			delete(lm.m, k)
		}
	}
}

// get returns the leader if it was heard from recently.
func (lm *leaderMap) get(key string, now time.Time) string {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	return lm.getLocked(key, now)
}

// getEach is get of every key, under one lock: a balance round looks up
// every stream, and taking the lock once per stream queued it behind the
// thousands of groups that change leaders at once after a kill -9 (the
// lock's waiters are handed it in turn; issue 20).
func (lm *leaderMap) getEach(keys []string, now time.Time) []string {
	out := make([]string, len(keys))
	lm.mu.Lock()
	defer lm.mu.Unlock()
	for i, k := range keys {
		out[i] = lm.getLocked(k, now)
	}
	return out
}

func (lm *leaderMap) getLocked(key string, now time.Time) string {
	cur, ok := lm.m[key]
	if !ok || cur.resigned || cur.term > 0 && !cur.held && now.Sub(cur.seen) > leaderForgetAfter {
		return ""
	}
	return cur.name
}

// wait returns the leader once one is known, or "" at the deadline.
func (lm *leaderMap) wait(clk clock.Clock, key string, deadline time.Time, quit <-chan struct{}) string {
	for {
		lm.mu.Lock()
		cur, ok := lm.m[key]
		ch := lm.changed
		lm.mu.Unlock()
		if ok && !cur.resigned {
			return cur.name
		}
		d := clk.Until(deadline)
		if d <= 0 {
			return ""
		}
		t := clk.NewTimer(d)
		select {
		case <-ch:
		case <-t.C():
		case <-quit:
		}
		t.Stop()
		select {
		case <-quit:
			return ""
		default:
		}
	}
}

// Announcement payloads: "<name> <term>" (leads) or "<name> <term> resigned";
// older Tern versions sent "<name>" alone. Server names have no spaces.
func encodeLeaderAnnouncement(name string, term uint64, resigned bool) []byte {
	b := make([]byte, 0, len(name)+32)
	b = append(b, name...)
	b = append(b, ' ')
	b = strconv.AppendUint(b, term, 10)
	if resigned {
		b = append(b, " resigned"...)
	}
	return b
}

func decodeLeaderAnnouncement(p string) (name string, term uint64, resigned, ok bool) {
	f := strings.Split(p, " ")
	switch {
	case len(f) == 1: // a version before terms (term 0): kept until replaced
		return f[0], 0, false, f[0] != ""
	case len(f) == 3 && f[2] != "resigned", len(f) > 3:
		return "", 0, false, false
	}
	t, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil || f[0] == "" {
		return "", 0, false, false
	}
	return f[0], t, len(f) == 3, true
}

// leaderAnnounced handles $JSC.LEADER.<account>.<stream> (the stream is
// the last token: stream names have no dots, account names may), and the
// meta group's $JSC.LEADER._meta_ (jetstream_meta_wedge.go).
func (jc *jsCluster) leaderAnnounced(_ *subscription, _ *client, _ *Account, subject, _ string, _, msg []byte) {
	if subject == metaLeaderSubject {
		jc.metaLeaderAnnounced(msg) // jetstream_meta_wedge.go
		return
	}
	rest := subject[len("$JSC.LEADER."):]
	i := strings.LastIndexByte(rest, '.')
	if i <= 0 {
		return
	}
	name, term, resigned, ok := decodeLeaderAnnouncement(string(msg))
	if !ok || name == jc.js.srv.Name() {
		return // our own announcements were recorded when sent
	}
	key := leaderKey(rest[:i], rest[i+1:])
	if resigned {
		jc.leaders.resign(key, name, term)
		jc.ackResignation(rest[:i], rest[i+1:], name, term)
		jc.wakeFollowerOf(rest[:i], rest[i+1:], name, term) // jetstream_resign_wake.go
	} else if jc.holdsEntriesOf(name) {
		jc.leaders.hold(key, name, term, jc.js.srv.clock.Now())
	} else {
		jc.leaders.set(key, name, term, jc.js.srv.clock.Now())
	}
}

// announce records and publishes that this server leads (or resigned
// from) a stream in term.
func (jc *jsCluster) announce(account, stream string, term uint64, resigned bool) {
	s := jc.js.srv
	jc.leaders.announced.Add(1)
	key := leaderKey(account, stream)
	if resigned {
		jc.leaders.resign(key, s.Name(), term)
	} else if jc.holdsEntriesOf(s.Name()) {
		jc.leaders.hold(key, s.Name(), term, s.clock.Now())
	} else {
		jc.leaders.set(key, s.Name(), term, s.clock.Now())
	}
	if sys := s.SystemAccount(); sys != nil {
		s.deliver(nil, sys, "$JSC.LEADER."+account+"."+stream, "", nil, encodeLeaderAnnouncement(s.Name(), term, resigned))
	}
}

func (jc *jsCluster) streamLeader(account, stream string) string {
	return jc.leaders.get(leaderKey(account, stream), jc.js.srv.clock.Now())
}

// reannounceLoop runs the leader duty every leaderAnnounceEvery
// (reannounce, jetstream_leader_list.go).
func (jc *jsCluster) reannounceLoop() {
	s := jc.js.srv
	defer s.wg.Done()
	for !s.sleepOnClock(leaderAnnounceEvery) {
		jc.reannounce()
	}
}

// replicatedStreams lists the local replicas of replicated streams.
func (js *jetStream) replicatedStreams() []*stream {
	var out []*stream
	for _, jsa := range js.accountList() {
		for _, mset := range jsa.streamList() {
			if mset.replicated {
				out = append(out, mset)
			}
		}
	}
	return out
}
