package server

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// Leader lists: with thousands of idle streams, a refresh of every
// leadership every second (one $JSC.LEADER message per stream) was most
// of an idle cluster's work. Servers that speak route protocol
// routeProtoLeaderList refresh theirs instead with one list of all the
// streams they lead ($JSC.LEADERS, in chunks), sent every leaderListEvery
// and at once when a route comes or goes; a change is still announced at
// once on $JSC.LEADER.<acc>.<stream>. A receiver keeps the entries of such
// a server without expiry (held): they go when the server resigns, a
// replica sees a newer leader, its route goes down, or a list of the
// server leaves them out (lists are exact: an entry missing from a list
// and set before the previous list arrived is stale). Per-stream refreshes
// go on, every leaderAnnounceEvery, while any peer is older (it expires
// entries it does not hear again within leaderForgetAfter).
//
// A list that would say what the previous two said goes only every
// leaderListIdle: with no announcement made since and the routes as they
// were, each receiver holds exactly that list's entries already (what
// announcements said, in order on one route). With 10,000 idle streams,
// sending, parsing and reconciling every list every 5 s was a good part of
// an idle cluster's work.

// routeProtoLeaderList is the route protocol of servers that send and
// read leader lists and hold their peers' leaderships without refreshes.
const routeProtoLeaderList = 7

var (
	leaderListEvery = 5 * time.Second
	leaderListIdle  = time.Minute
)

const (
	leaderListSubject = "$JSC.LEADERS"
	leaderListChunk   = 32 * 1024 // bytes of entries per message
	leaderListRepeat  = 3         // lists sent, a period apart, after a route change
)

// listSender is the state of the periodic duty (reannounce): touched only
// by its caller, one goroutine (the loop, or a raftHost's).
type listSender struct {
	last    time.Time
	routes  string // fingerprint of the routes at the last look
	pending int    // lists still to send after a route change
	// sent is when the last list went, led what it said, announced the
	// count of announcements made before it was made; again: it said
	// something new, so one more goes.
	sent      time.Time
	led       []leadership
	announced uint64
	again     bool
}

// reannounce is the leader duty run every leaderAnnounceEvery: it
// refreshes this server's leaderships on every server (a list at a low
// rate, or per stream while an older peer needs it) and reconciles the
// membership of the led groups that asked (reconcileWanted).
func (jc *jsCluster) reannounce() {
	s := jc.js.srv
	if jc.legacyPeers() {
		jc.reannounceEach()
	} else if led, due := jc.listDue(s.clock.Now()); due {
		jc.sendLeaderList(led)
	}
	for _, w := range jc.leaders.reconcileWanted() {
		w.mset.mu.Lock()
		gone := w.mset.closed || w.mset.group == nil
		w.mset.mu.Unlock()
		if gone {
			jc.leaders.reconciled(w.mset, w.gen)
		} else {
			w.mset.reconcileOnce(w.gen)
		}
	}
}

// legacyPeers reports whether some peer (or this server, made to look
// older by a test) needs per-stream refreshes.
func (jc *jsCluster) legacyPeers() bool {
	s := jc.js.srv
	if own := s.getOpts().routeProto; own != 0 && own < routeProtoLeaderList {
		return true
	}
	for _, r := range s.routeList() {
		if r.remote.Proto < routeProtoLeaderList {
			return true
		}
	}
	return false
}

// listDue returns this server's leaderships when a leader list is due:
// the routes changed lately (the peer that came may not have told its
// interest yet: a few lists go, one a period), or leaderListEvery passed
// and the list differs from the last one sent (or an announcement went
// out since, or leaderListIdle passed).
func (jc *jsCluster) listDue(now time.Time) ([]leadership, bool) {
	ls := &jc.leaders.send
	fp := routesFingerprint(jc.js.srv.routeList())
	if fp != ls.routes {
		ls.routes, ls.pending = fp, leaderListRepeat
	}
	if ls.pending == 0 && now.Sub(ls.last) < leaderListEvery {
		return nil, false
	}
	ls.last = now
	announced := jc.leaders.announced.Load() // before the list is made
	led := jc.js.ledStreams()
	changed := announced != ls.announced || !slices.Equal(led, ls.led)
	if ls.pending == 0 && !changed && !ls.again && now.Sub(ls.sent) < leaderListIdle {
		return nil, false
	}
	// An entry announced after a list and left out of the next goes only
	// at the one after: a list that says something new is followed by one
	// more.
	ls.pending, ls.again = max(ls.pending-1, 0), changed
	ls.sent, ls.led, ls.announced = now, led, announced
	return led, true
}

// routesFingerprint names the routes up (a reconnect gives a new id).
func routesFingerprint(routes []*route) string {
	ids := make([]uint64, 0, len(routes))
	for _, r := range routes {
		ids = append(ids, r.rid)
	}
	if len(ids) == 0 {
		return ""
	}
	slices.Sort(ids)
	var b []byte
	for _, id := range ids {
		b = strconv.AppendUint(append(b, ' '), id, 10)
	}
	return string(b)
}

// reannounceEach refreshes every leadership with its own announcement.
func (jc *jsCluster) reannounceEach() {
	for _, l := range jc.js.ledStreams() {
		jc.announce(l.account, l.stream, l.term, false)
	}
}

type leadership struct {
	account, stream string
	term            uint64
}

// ledStreams lists the replicated streams this server leads and serves,
// in order of account and stream.
func (js *jetStream) ledStreams() []leadership {
	var out []leadership
	for _, mset := range js.localReplicas() {
		mset.mu.Lock()
		g, lead, name := mset.group, mset.leader, mset.cfg.Name
		mset.mu.Unlock()
		if !lead || g == nil {
			continue
		}
		if st := g.softState(); st.Role == raft.Leader && st.LeaderReady {
			out = append(out, leadership{mset.jsa.acc.Name, name, st.Term})
		}
	}
	slices.SortFunc(out, func(a, b leadership) int {
		if c := strings.Compare(a.account, b.account); c != 0 {
			return c
		}
		return strings.Compare(a.stream, b.stream)
	})
	return out
}

// localReplicas lists the local replicas of replicated streams, in no
// order (replicatedStreams sorts them by name: ledStreams sorts the few it
// keeps instead).
func (js *jetStream) localReplicas() []*stream {
	var out []*stream
	for _, jsa := range js.accountList() {
		jsa.mu.RLock()
		for _, mset := range jsa.streams {
			if mset.replicated {
				out = append(out, mset)
			}
		}
		jsa.mu.RUnlock()
	}
	return out
}

// sendLeaderList sends this server's leaderships: lines "<account>
// <stream> <term>" after a first line "<server> <more>", in chunks; the
// last chunk has more = 0 (a receiver drops stale entries at it).
func (jc *jsCluster) sendLeaderList(led []leadership) {
	s := jc.js.srv
	sys := s.SystemAccount()
	if sys == nil {
		return
	}
	for _, chunk := range encodeLeaderList(s.Name(), led) {
		s.deliver(nil, sys, leaderListSubject, "", nil, chunk)
	}
}

func encodeLeaderList(name string, led []leadership) [][]byte {
	var out [][]byte
	var body []byte
	flush := func(last bool) {
		more := "1"
		if last {
			more = "0"
		}
		msg := make([]byte, 0, len(name)+3+len(body))
		msg = append(append(append(msg, name...), ' '), more...)
		out = append(out, append(msg, body...))
		body = body[:0]
	}
	for _, l := range led {
		if len(body) >= leaderListChunk {
			flush(false)
		}
		body = append(append(append(append(body, '\n'), l.account...), ' '), l.stream...)
		body = strconv.AppendUint(append(body, ' '), l.term, 10)
	}
	flush(true)
	return out
}

// decodeLeaderList parses one chunk; ok is false for a malformed one.
func decodeLeaderList(p []byte) (name string, last bool, led []leadership, ok bool) {
	lines := bytes.Split(p, []byte{'\n'})
	head := bytes.Split(lines[0], []byte{' '})
	if len(head) != 2 || len(head[0]) == 0 || string(head[1]) != "0" && string(head[1]) != "1" {
		return "", false, nil, false
	}
	for _, ln := range lines[1:] {
		f := bytes.Split(ln, []byte{' '})
		if len(f) != 3 || len(f[0]) == 0 || len(f[1]) == 0 {
			return "", false, nil, false
		}
		t, err := strconv.ParseUint(string(f[2]), 10, 64)
		if err != nil {
			return "", false, nil, false
		}
		led = append(led, leadership{string(f[0]), string(f[1]), t})
	}
	return string(head[0]), string(head[1]) == "0", led, true
}

// leaderListed handles a chunk of another server's leader list.
func (jc *jsCluster) leaderListed(_ *subscription, _ *client, _ *Account, _, _ string, _, msg []byte) {
	name, last, led, ok := decodeLeaderList(msg)
	if !ok || name == jc.js.srv.Name() {
		return
	}
	jc.leaders.listed(name, led, last, jc.js.srv.clock.Now())
}

// holdsEntriesOf reports whether server name's leaderships are kept
// without refreshes: it sends leader lists (and so does this server).
func (jc *jsCluster) holdsEntriesOf(name string) bool {
	s := jc.js.srv
	if o := s.getOpts(); o != nil && o.routeProto != 0 && o.routeProto < routeProtoLeaderList {
		return false
	}
	if name == s.Name() {
		return true
	}
	r := s.routeForPeer(raftID(name))
	return r != nil && r.remote.Proto >= routeProtoLeaderList
}
