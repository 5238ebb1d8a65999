package server

import (
	"bytes"
	"slices"
	"strconv"
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

// routeProtoLeaderList is the route protocol of servers that send and
// read leader lists and hold their peers' leaderships without refreshes.
const routeProtoLeaderList = 7

var leaderListEvery = 5 * time.Second

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
}

// reannounce is the leader duty run every leaderAnnounceEvery: it
// refreshes this server's leaderships on every server (a list at a low
// rate, or per stream while an older peer needs it) and reconciles the
// membership of the led groups that asked (reconcileWanted).
func (jc *jsCluster) reannounce() {
	s := jc.js.srv
	if jc.legacyPeers() {
		jc.reannounceEach()
	} else if jc.listDue(s.clock.Now()) {
		jc.sendLeaderList()
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

// listDue reports whether a leader list is due: leaderListEvery passed,
// or the routes changed lately (the peer that came may not have told its
// interest yet: a few lists go, one a period).
func (jc *jsCluster) listDue(now time.Time) bool {
	ls := &jc.leaders.send
	fp := routesFingerprint(jc.js.srv.routeList())
	if fp != ls.routes {
		ls.routes, ls.pending = fp, leaderListRepeat
	}
	if ls.pending > 0 || now.Sub(ls.last) >= leaderListEvery {
		ls.pending = max(ls.pending-1, 0)
		ls.last = now
		return true
	}
	return false
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

// ledStreams lists the replicated streams this server leads and serves.
func (js *jetStream) ledStreams() []leadership {
	var out []leadership
	for _, mset := range js.replicatedStreams() {
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
	return out
}

// sendLeaderList sends this server's leaderships: lines "<account>
// <stream> <term>" after a first line "<server> <more>", in chunks; the
// last chunk has more = 0 (a receiver drops stale entries at it).
func (jc *jsCluster) sendLeaderList() {
	s := jc.js.srv
	sys := s.SystemAccount()
	if sys == nil {
		return
	}
	for _, chunk := range encodeLeaderList(s.Name(), jc.js.ledStreams()) {
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
