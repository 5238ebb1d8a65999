package server

import (
	"slices"
	"strings"
	"time"
)

// A stream whose servers are all offline cannot answer for itself: an
// update of it would be applied by the meta group and answered by nobody.
// nats-server answers such an update "stream is offline" (10118) from the
// meta leader, 500 ms late so that a leader it does not know of may answer
// first; Tern does the same. A stream with a server online but no leader
// is still answered by nobody, as in nats-server (the client times out).

// offlineAnswerDelay is how long the meta leader waits before it answers
// "stream is offline".
var offlineAnswerDelay = 500 * time.Millisecond

func errStreamOffline() *ApiError { return apiErr(500, 10118, "stream is offline") }

// streamOffline reports whether none of sa's servers is this one or one
// a live route leads to.
func (jc *jsCluster) streamOffline(sa *streamAssignment) bool {
	s := jc.js.srv
	if len(sa.Peers) == 0 || slices.Contains(sa.Peers, s.Name()) {
		return false
	}
	now := time.Now().UnixNano() // route.heard is stamped with the wall clock (raft_live.go)
	for _, r := range s.routeList() {
		if slices.Contains(sa.Peers, r.remote.Name) && peerHealthOf(r, now).Live {
			return false
		}
	}
	return true
}

// answerLater answers r with resp, of response type typ, after d.
func (r *apiRequest) answerLater(typ string, resp any, d time.Duration) {
	s := r.jsa.js.srv
	cp := *r
	cp.reply, cp.subject = strings.Clone(r.reply), strings.Clone(r.subject)
	cp.hdr, cp.body = nil, nil
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := s.clock.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C():
			cp.respond(nil, typ, resp)
		case <-s.quit:
		}
	}()
}
