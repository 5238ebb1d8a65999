package server

import (
	"slices"
	"time"

	"github.com/nats-io/nats-server/v2/internal/clock"
)

// A stream's deletion is answered by the meta call's origin once it has
// applied the entry, and every server stops its replica as it applies the
// entry. The stream's leader on another server went on answering the
// stream's calls until it applied it too: a STREAM.INFO sent right after
// the answer was answered twice, "not found" by the meta leader and with
// the stream's info by the old leader, and a client connected to the
// latter took that first (TestJetStreamClusterCreateAndPublish failed on
// it under load; TestJetStreamClusterDeletedStreamGoneEverywhere).
// nats-server has the stream's leader answer the deletion once it stopped.
//
// The origin therefore answers once the leader it knew at the apply has
// announced that it stopped leading (stopReplicaOf announces it after the
// replica left the lookups that answer calls; the announcement comes over
// the same route as that server's answers), or that server's route is
// gone, or deleteAnswerWait passed: the answer then goes anyway (the
// stream is deleted; only a server that slow may still answer for it).

// deleteAnswerWait bounds the wait, under nats.go's default 5 s timeout.
var deleteAnswerWait = 2 * time.Second

// deleteAnswerPoll paces the look at the old leader's route.
const deleteAnswerPoll = 50 * time.Millisecond

// testHookMetaApply is called as a server applies a meta entry (a test
// makes one server apply deletions late).
var testHookMetaApply func(s *Server, me *metaEntry)

// takeLeader forgets key's entry and returns the server it names as
// leading now ("" for a resignation or an entry too old to trust).
func (lm *leaderMap) takeLeader(key string, now time.Time) string {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	cur, ok := lm.m[key]
	delete(lm.m, key)
	if !ok || cur.resigned || cur.term > 0 && !cur.held && now.Sub(cur.seen) > leaderForgetAfter {
		return ""
	}
	return cur.name
}

// waitResigned waits until name's resignation from key is recorded, gone
// reports name's server gone, quit closes, or the deadline passes.
func (lm *leaderMap) waitResigned(clk clock.Clock, key, name string, deadline time.Time, quit <-chan struct{}, gone func() bool) {
	for !gone() {
		lm.mu.Lock()
		cur, ok := lm.m[key]
		ch := lm.changed
		lm.mu.Unlock()
		if ok && cur.resigned && cur.name == name {
			return
		}
		d := clk.Until(deadline)
		if d <= 0 {
			return
		}
		t := clk.NewTimer(min(d, deleteAnswerPoll))
		select {
		case <-ch:
		case <-t.C():
		case <-quit:
			t.Stop()
			return
		}
		t.Stop()
	}
}

// awaitLeaderStopped waits, before a deletion is answered, for the
// stream's leader on another server to stop (see above).
func (jc *jsCluster) awaitLeaderStopped(me *metaEntry, sa *streamAssignment) {
	s := jc.js.srv
	lead := me.stoppedLead
	if lead == "" || lead == s.Name() {
		return
	}
	gone := func() bool { return !slices.Contains(s.routePeers(), lead) }
	jc.leaders.waitResigned(s.clock, leaderKey(sa.Account, sa.Config.Name), lead, s.clock.Now().Add(deleteAnswerWait), s.done, gone)
}
