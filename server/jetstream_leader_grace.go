package server

import (
	"encoding/json"
	"slices"
	"strings"
)

// A stream's API request reaches every server; the stream's leader
// answers it. The server the client is connected to answers "temporarily
// unavailable" (10008) when it knows no leader, but leader announcements
// travel over other routes than the request and the leader's answer, so a
// leader that has just answered this client's previous request may not be
// known here yet: an immediate 10008 would race, and often beat, the real
// answer. Such a server therefore waits leaderGrace for a leader to become
// known and answers 10008 only if none does. One announce period also
// covers a first announcement sent before this server's interest reached
// the leader (leaders re-announce every leaderAnnounceEvery). nats-server
// stays silent for far longer (until a group has been leaderless for
// seconds), and the client times out.
var leaderGrace = leaderAnnounceEvery

// maxGraceWaiters bounds the goroutines waiting out a grace; beyond it,
// requests are answered 10008 at once.
const maxGraceWaiters = 1024

// unavailableLater is clusteredDispatch's answer "10008 unless a leader
// of stream becomes known within leaderGrace".
type unavailableLater struct {
	prefix, account, stream string
}

// answerUnavailableLater waits out the grace on a goroutine of its own
// (the leader's announcement may come in through the read loop running
// this handler) and answers 10008 if no leader became known.
func (r *apiRequest) answerUnavailableLater(typ string, ul *unavailableLater) {
	js := r.jsa.js
	jc, s := js.cluster, js.srv
	answer := func() {
		resp := routeErr(ul.prefix, errClusterNotAvail())
		setResponseType(resp, apiTypePrefix+typ)
		b, _ := json.Marshal(resp)
		js.apiErrs.Add(1)
		s.deliver(nil, r.jsa.acc, r.reply, "", nil, b)
	}
	if jc.graceWaiters.Add(1) > maxGraceWaiters || s.shutdown.Load() {
		jc.graceWaiters.Add(-1)
		answer()
		return
	}
	r.reply, r.subject = strings.Clone(r.reply), strings.Clone(r.subject)
	r.hdr, r.body = slices.Clone(r.hdr), slices.Clone(r.body)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer jc.graceWaiters.Add(-1)
		key := leaderKey(ul.account, ul.stream)
		leader := jc.leaders.waitFresh(s.clock, key, s.clock.Now().Add(leaderGrace), s.quit)
		switch {
		case s.shutdown.Load():
		case leader == "":
			answer()
		case !readOnly(ul.prefix):
		case leader == s.Name():
			r.answerNowLeading(typ, ul)
		default:
			r.askAgain()
		}
	}()
}

// askAgain sends a read-only call once more, for the leader that became
// known during the grace: it may have received the first copy before it
// led, and then nobody answered it. A leader that did answer answers
// twice; the client takes the first, and a read changes nothing. The copy
// comes from no client, so no server answers it 10008.
func (r *apiRequest) askAgain() {
	r.jsa.js.srv.deliver(nil, r.jsa.acc, jsAPIPrefix+r.subject, r.reply, r.hdr, r.body)
}

// answerNowLeading answers a read-only call this server received before
// it took the stream's lead during the grace: it did not answer then, and
// no other server led to answer it (the leader map would have named it),
// so without this the client heard nothing (a leader's process gone, a
// survivor elected: TestJetStreamClusterAPIAnswersWhileLeaderChanges).
// A call that changes state is not answered: another server may have
// applied it meanwhile (stream.proposed).
func (r *apiRequest) answerNowLeading(typ string, ul *unavailableLater) {
	defer r.recoverPanic()
	mset := r.jsa.lookup(ul.stream)
	if mset == nil || !mset.isLeader() {
		return
	}
	for _, route := range clusterRoutes {
		if route.prefix != ul.prefix {
			continue
		}
		if mset.replicated && answersAfterRead(route.prefix) {
			r.answerAfterRead(mset, typ, route.handler)
			return
		}
		if resp := route.handler(r); resp != nil {
			r.answerRead(typ, resp)
		}
		return
	}
}
