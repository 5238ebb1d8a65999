package server

// A stream's API request reaches every server; the stream's leader
// answers it. The server the client is connected to answers "temporarily
// unavailable" (10008) when it knows no leader, but leader announcements
// travel over other routes than the request and the leader's answer, so a
// leader that has just answered this client's previous request may not be
// known here yet: an immediate 10008 raced, and often beat, the leader's
// answer (TestJetStreamClusterKVWatchKeysHistoryR3 failed in CI on it).
//
// Such a server therefore watches the request's reply subject: the
// leader's answer comes back through it, since the client is connected
// here. If an answer passes within leaderGrace, this server stays silent;
// otherwise it answers 10008. Waiting for a leader to become known instead
// would not do: a leader that became ready after the request reached it
// never answered it, and the client would hear nothing. nats-server stays
// silent until a group has been leaderless for seconds, and the client
// times out.
var leaderGrace = leaderAnnounceEvery

// maxGraceWaiters bounds the requests whose reply subjects are watched;
// beyond it, requests are answered 10008 at once.
const maxGraceWaiters = 1024

// unavailableLater is clusteredDispatch's answer "10008 unless the
// leader's answer passes within leaderGrace".
// meta: a meta call that changes nothing (jetstream_meta_wedge.go).
type unavailableLater struct {
	prefix, account, stream string
	meta                    bool
}

// answerUnavailableLater watches r's reply subject for leaderGrace and
// answers 10008 if nothing passed. The watch is in place microseconds
// after the request was queued to the routes (their writes are mostly
// flushed after this read batch), long before a route round trip can
// bring an answer back; an answer that passed before would cost a second
// answer, 10008, as before this grace, never silence.
//
// A call that changes state (a consumer create, a purge) may be applied
// after the grace by a leader that became known meanwhile: 10008 would
// say "not done" for something done (issue 19), so such a call is left
// to that leader, and the client may time out. Only while no leader is
// known at all does it get 10008.
func (r *apiRequest) answerUnavailableLater(typ string, ul *unavailableLater) {
	jc, s := r.jsa.js.cluster, r.jsa.js.srv
	answer := func() { r.respond(nil, typ, routeErr(ul.prefix, errClusterNotAvail())) }
	started := r.watchReply(&jc.graceWaiters, maxGraceWaiters, func(seen <-chan struct{}) {
		t := s.clock.NewTimer(leaderGrace)
		defer t.Stop()
		select {
		case <-seen:
		case <-s.quit:
		case <-t.C():
			if ul.meta || readOnly(ul.prefix) || jc.streamLeader(ul.account, ul.stream) == "" {
				answer()
			}
		}
	})
	if !started {
		answer()
	}
}
