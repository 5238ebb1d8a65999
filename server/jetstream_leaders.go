package server

import (
	"github.com/nats-io/nats-server/v2/internal/lockorder"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/internal/clock"
	"github.com/nats-io/nats-server/v2/internal/raft"
)

// Every server keeps a map of who leads each replicated stream, so that
// exactly one server answers a stream's API requests and the server a
// client is connected to can answer "temporarily unavailable" (10008)
// when nobody leads. A leader announces itself on $JSC.LEADER.<acc>.<stream>
// with its raft term once it is ready, again every leaderAnnounceEvery,
// and resigns when it stops leading. Entries are dropped when the
// leader's route goes down, when a local replica sees a newer term with
// another leader, and when they have not been refreshed for
// leaderForgetAfter: a stale entry can make requests go unanswered only
// for that long.

var (
	leaderAnnounceEvery = time.Second
	leaderForgetAfter   = 3 * time.Second
)

type leaderInfo struct {
	name     string
	term     uint64
	seen     time.Time
	resigned bool // name stopped leading in term: a tombstone
}

type leaderMap struct {
	mu      lockorder.Mutex[lockorder.LeaderMap]
	m       map[string]leaderInfo // "account stream" → leader
	changed chan struct{}         // closed and replaced on every change
}

func newLeaderMap() *leaderMap {
	return &leaderMap{m: map[string]leaderInfo{}, changed: make(chan struct{})}
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
	cur, ok := lm.m[key]
	if ok && (cur.term > term || cur.term == term && cur.resigned && cur.name == name) {
		return
	}
	lm.m[key] = leaderInfo{name: name, term: term, seen: now}
	if !ok || cur.name != name || cur.resigned {
		lm.notifyLocked()
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
	cur, ok := lm.m[key]
	if !ok || cur.resigned || cur.term > 0 && now.Sub(cur.seen) > leaderForgetAfter {
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
// the last token: stream names have no dots, account names may).
func (jc *jsCluster) leaderAnnounced(_ *subscription, _ *client, _ *Account, subject, _ string, _, msg []byte) {
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
	} else {
		jc.leaders.set(key, name, term, jc.js.srv.clock.Now())
	}
}

// announce records and publishes that this server leads (or resigned
// from) a stream in term.
func (jc *jsCluster) announce(account, stream string, term uint64, resigned bool) {
	s := jc.js.srv
	key := leaderKey(account, stream)
	if resigned {
		jc.leaders.resign(key, s.Name(), term)
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

// reannounceLoop refreshes this server's leaderships every
// leaderAnnounceEvery (reannounce).
func (jc *jsCluster) reannounceLoop() {
	s := jc.js.srv
	defer s.wg.Done()
	for !s.sleepOnClock(leaderAnnounceEvery) {
		jc.reannounce()
	}
}

// reannounce refreshes this server's leaderships on every server and
// keeps each led group's membership in line with its placement.
func (jc *jsCluster) reannounce() {
	for _, mset := range jc.js.replicatedStreams() {
		mset.mu.Lock()
		g, lead, name := mset.group, mset.leader, mset.cfg.Name
		mset.mu.Unlock()
		if lead && g != nil {
			if st := g.softState(); st.Role == raft.Leader && st.LeaderReady {
				jc.announce(mset.jsa.acc.Name, name, st.Term, false)
				mset.reconcilePeers()
			}
		}
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
