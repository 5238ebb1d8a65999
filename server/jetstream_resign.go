package server

import (
	"strings"
	"time"
)

// A stream request is answered by the server that leads the stream when
// the request reaches it; the server the client is connected to stays
// silent when its leader map names another server. Both decide on their
// own, at different moments, so a request could fall between them: the
// client's server leaves it to leader L, L resigns before the request
// reaches it, and the new leader got its copy before it led. Nobody
// answered (TestJetStreamClusterAPIAnswersWhileLeaderChanges, under load).
//
// So a replica that stops leading keeps a resignation window: a stream
// request that reaches it from another server while a server may still
// leave requests to it is answered "temporarily unavailable" (10008). A
// server acknowledges each resignation it hears ($JSC.RESIGNED.<acc>.
// <stream>, "<resigner> <term> <acker>"), and it queues a request to the
// routes before its API handler reads the leader map
// (subscribeInternalAfterRoutes). One route carries both directions'
// messages in order, so every request a server left to L reaches L before
// its acknowledgement does; once every server connected at the
// resignation has acknowledged it, nobody leaves anything to L. A server
// that never acknowledges (an older version) forgets L within
// leaderForgetAfter of L's last announcement, which bounds the window.
// A routed request does not say which server it came from, so until the
// last acknowledgement a request any server left to the new leader gets a
// second answer, 10008, too: the client takes whichever comes first, and a
// window lasts a round trip. That is why only calls that change nothing
// get the 10008 (readOnlyRoutes): a change answered 10008 while the new
// leader applies it would be a false "not done".

const resignAckPrefix = "$JSC.RESIGNED."

// resignWindow is a replica's last resignation (under stream.mu).
type resignWindow struct {
	term    uint64
	at      time.Time
	waiting map[string]bool // servers that have not acknowledged it yet
}

// resignedLocked opens the window of a resignation in term; peers are the
// servers connected at the time.
func (mset *stream) resignedLocked(term uint64, peers []string) {
	w := resignWindow{term: term, at: mset.jsa.js.srv.clock.Now(), waiting: map[string]bool{}}
	for _, p := range peers {
		w.waiting[p] = true
	}
	mset.resign = w
}

// routePeers names the servers this one has routes to.
func (s *Server) routePeers() []string {
	var out []string
	for _, r := range s.routeList() {
		out = append(out, r.remote.Name)
	}
	return out
}

// answersUnavailable reports whether a request for this replica's stream
// that arrived from another server must be answered 10008: this replica
// does not lead, and a server may still have left the request to it.
func (mset *stream) answersUnavailable() bool {
	mset.mu.Lock()
	defer mset.mu.Unlock()
	w := &mset.resign
	return !mset.leader && len(w.waiting) > 0 && mset.jsa.js.srv.clock.Since(w.at) <= leaderForgetAfter+time.Second
}

// ackResignation tells every server that this one heard name resign from
// the stream's leadership in term.
func (jc *jsCluster) ackResignation(account, stream, name string, term uint64) {
	s := jc.js.srv
	if sys := s.SystemAccount(); sys != nil {
		payload := encodeLeaderAnnouncement(name, term, false)
		payload = append(append(payload, ' '), s.Name()...)
		s.deliver(nil, sys, resignAckPrefix+account+"."+stream, "", nil, payload)
	}
}

// resignationAcked handles $JSC.RESIGNED.<account>.<stream>: another server
// heard one of this server's resignations.
func (jc *jsCluster) resignationAcked(_ *subscription, _ *client, _ *Account, subject, _ string, _, msg []byte) {
	rest := subject[len(resignAckPrefix):]
	i := strings.LastIndexByte(rest, '.')
	f := strings.Split(string(msg), " ")
	if i <= 0 || len(f) != 3 || f[0] != jc.js.srv.Name() {
		return
	}
	name, term, _, ok := decodeLeaderAnnouncement(f[0] + " " + f[1])
	if !ok || name != f[0] {
		return
	}
	jsa := jc.js.account(rest[:i])
	if jsa == nil {
		return
	}
	mset := jsa.lookup(rest[i+1:])
	if mset == nil {
		return
	}
	mset.mu.Lock()
	if w := &mset.resign; w.term == term {
		delete(w.waiting, f[2])
	}
	mset.mu.Unlock()
}
