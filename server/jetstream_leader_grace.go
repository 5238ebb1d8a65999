package server

import (
	"encoding/json"
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
	r.reply = strings.Clone(r.reply)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer jc.graceWaiters.Add(-1)
		key := leaderKey(ul.account, ul.stream)
		if jc.leaders.waitFresh(s.clock, key, s.clock.Now().Add(leaderGrace), s.quit) == "" && !s.shutdown.Load() {
			answer()
		}
	}()
}
