package server

import (
	"encoding/json"
	"hash/maphash"
	"time"
)

// A stream's leader-only API call (every stream route that is not the meta
// leader's) reaches every server, and the replica that leads answers it.
// A leader learns that it was demoted as its group takes the Ready that
// says so, but it stops serving only once that Ready is persisted: with a
// slow disk, a second or more later. A call it takes meanwhile is no
// longer its to answer, and whether the new leader answers depends on
// whether the new leader served when its own copy arrived, which the
// demoted replica cannot see. Answering 10008 was wrong when the new
// leader answered too (a stepdown's client saw a spurious error), and
// staying silent was wrong when it did not (STREAM.INFO went unanswered
// during a handover).
//
// So the demoted replica forwards the call ($JSC.APIFWD, to every server)
// with the term that demoted it, and every replica of the stream that
// receives the forward waits up to apiForwardWait for its group to lead and
// serve in that term; the one that does (there is at most one) answers the
// call, unless it already answered the call's own copy. The term matters:
// a leader of a later term cannot know whether the leader of that term
// answered the call (it had, and stepped down: the call ran twice). If
// nobody leads that term (its election failed) nobody answers. Each server
// keeps the calls it answered in the last apiAnswerTTL (apiAnswers), so a
// forward of a call answered directly is dropped, and a direct copy that
// arrives after its forward was answered (the forward came by a faster
// route) is dropped too. A call is told from another by its account,
// subject, reply subject and body: a client sending the same request to
// the same reply subject twice within apiAnswerTTL, once answered
// directly and once forwarded, gets one answer (its client times out).
//
// A forwarded call that this server cannot run as leader either (it lost
// the leadership again meanwhile) is not forwarded again.

const apiForwardSubject = "$JSC.APIFWD"

// apiForwardWait bounds how long a replica waits for its group to lead
// and serve before it drops a forwarded call.
var apiForwardWait = 2 * time.Second

// apiForwardsMax bounds the forwarded calls waiting on one server.
const apiForwardsMax = 64

// apiForward is a forwarded call as it travels.
type apiForward struct {
	Account string `json:"acc"`
	Subject string `json:"subj"` // without the $JS.API. prefix
	Reply   string `json:"reply"`
	Hdr     []byte `json:"hdr,omitempty"`
	Body    []byte `json:"body,omitempty"`
	Term    uint64 `json:"term"` // the term whose leader answers
}

// forwardToLeader hands r to the replica of mset's stream that leads in
// the term mset's group knows of.
func (r *apiRequest) forwardToLeader(mset *stream) {
	if r.forwarded {
		return
	}
	s := r.jsa.js.srv
	sys := s.SystemAccount()
	if sys == nil {
		return
	}
	b, err := json.Marshal(&apiForward{Account: r.jsa.acc.Name, Subject: r.subject, Reply: r.reply, Hdr: r.hdr, Body: r.body, Term: mset.groupTerm()})
	if err != nil {
		return
	}
	s.deliver(nil, sys, apiForwardSubject, "", nil, b)
}

// apiForwarded handles $JSC.APIFWD: the call is answered here if this
// server's replica leads within apiForwardWait.
func (jc *jsCluster) apiForwarded(_ *subscription, _ *client, _ *Account, _, _ string, _, msg []byte) {
	var f apiForward
	if err := json.Unmarshal(msg, &f); err != nil || f.Reply == "" {
		return
	}
	js := jc.js
	jsa := js.account(f.Account)
	if jsa == nil {
		return
	}
	r := &apiRequest{jsa: jsa, subject: f.Subject, reply: f.Reply, hdr: f.Hdr, body: f.Body, forwarded: true}
	route := streamRouteOf(r.subject)
	if route == nil {
		return
	}
	mset := jsa.lookup(r.routeStream(route.prefix))
	if mset == nil || js.forwardsWaiting.Add(1) > apiForwardsMax {
		js.forwardsWaiting.Add(-1)
		return
	}
	s := js.srv
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer js.forwardsWaiting.Add(-1)
		defer r.recoverPanic()
		if !mset.awaitLeading(f.Term, apiForwardWait) || !js.answerForwarded(r.answerKey()) {
			return
		}
		if resp := r.answerAsLeader(mset, route); resp != nil {
			r.respond(nil, route.typ, resp)
		}
	}()
}

// streamRouteOf is the stream (not meta) route of an API subject, or nil.
func streamRouteOf(subject string) *clusterRoute {
	for i := range clusterRoutes {
		if route := &clusterRoutes[i]; matchesRoute(subject, route.prefix) {
			if route.meta {
				return nil
			}
			return route
		}
	}
	return nil
}

// awaitLeading reports whether this replica leads in term and serves
// within d, checking every 20 ms.
func (mset *stream) awaitLeading(term uint64, d time.Duration) bool {
	s := mset.jsa.js.srv
	deadline := s.clock.Now().Add(d)
	for {
		if t, ok := mset.servingTerm(); ok && t == term {
			return true
		}
		if mset.groupTerm() > term || s.clock.Until(deadline) <= 0 {
			return false
		}
		t := s.clock.NewTimer(20 * time.Millisecond)
		select {
		case <-t.C():
		case <-s.quit:
			t.Stop()
			return false
		}
	}
}

// apiAnswerTTL is how long a server remembers a call it answered.
const apiAnswerTTL = 5 * time.Second

// apiAnswersMax bounds the calls remembered; the oldest go first.
const apiAnswersMax = 1024

// apiAnswers are the leader-only calls this server answered lately (under
// jetStream.mu).
type apiAnswers struct {
	seed  maphash.Seed
	marks map[uint64]answerMark
	ring  []uint64 // keys in the order they were marked
	next  int      // the ring's oldest slot
}

type answerMark struct {
	at        time.Time
	forwarded bool // answered from a forward
	slot      int
}

// answerKey tells r from other calls.
func (r *apiRequest) answerKey() uint64 {
	js := r.jsa.js
	js.mu.Lock()
	if js.answers.marks == nil {
		js.answers.seed = maphash.MakeSeed()
		js.answers.marks = map[uint64]answerMark{}
	}
	seed := js.answers.seed
	js.mu.Unlock()
	var h maphash.Hash
	h.SetSeed(seed)
	for _, part := range []string{r.jsa.acc.Name, r.subject, r.reply} {
		h.WriteString(part)
		h.WriteByte(0)
	}
	h.Write(r.body)
	return h.Sum64()
}

// answerDirect reports whether a call that reached this leader directly is
// to be answered: not when its forward was answered already.
func (js *jetStream) answerDirect(key uint64) bool {
	js.mu.Lock()
	defer js.mu.Unlock()
	now := js.srv.clock.Now()
	if m, ok := js.answers.marks[key]; ok && m.forwarded && now.Sub(m.at) <= apiAnswerTTL {
		delete(js.answers.marks, key)
		return false
	}
	js.answers.mark(key, now, false)
	return true
}

// answerForwarded reports whether a forwarded call is to be answered: not
// when this server answered it (or another forward of it) already.
func (js *jetStream) answerForwarded(key uint64) bool {
	js.mu.Lock()
	defer js.mu.Unlock()
	now := js.srv.clock.Now()
	if m, ok := js.answers.marks[key]; ok && now.Sub(m.at) <= apiAnswerTTL {
		return false
	}
	js.answers.mark(key, now, true)
	return true
}

func (a *apiAnswers) mark(key uint64, now time.Time, forwarded bool) {
	if a.ring == nil {
		a.ring = make([]uint64, apiAnswersMax)
	}
	if m, ok := a.marks[key]; ok {
		a.marks[key] = answerMark{at: now, forwarded: forwarded, slot: m.slot}
		return
	}
	if old, ok := a.marks[a.ring[a.next]]; ok && old.slot == a.next {
		delete(a.marks, a.ring[a.next])
	}
	a.ring[a.next] = key
	a.marks[key] = answerMark{at: now, forwarded: forwarded, slot: a.next}
	a.next = (a.next + 1) % apiAnswersMax
}
