package server

// A wedged meta leader (raft_wedge.go) is deposed as a stream's is: its
// server tells the others that it resigned from the meta group in the
// term it led, so their meta followers wake (raft.Node.LeaderStopped)
// and elect even if they sleep, and it stops acting as the meta leader
// (raftGroup.tell: its soft state is a follower's, knowing no leader, so
// isMetaLeader is false, and a meta call reaching it is left to the
// others). Its stalled group learns of no new leader, but one elected
// elsewhere hears every call too and answers it: the immediate 10008 of a
// server that knows no leader beat that answer to a client connected
// here. So a call from such a client that changes nothing gets 10008
// only if no answer passed within leaderGrace (jetstream_leader_grace.go),
// and one that changes something is left to the new leader, as a resigned
// stream leader leaves it (jetstream_api_read.go, readOnlyRoutes): a
// stream create is answered once its stream has a leader, often after
// that grace, and a 10008 first would say "not done" for a change done.
// With no leader elected yet the client times out and retries.
//
// The announcement goes on the stream leaders' channel, with the group's
// name as the only token after the prefix: $JSC.LEADER._meta_, payload
// "<name> <term> resigned". A stream's subject always has an account
// token before its name, so no stream's can be mistaken for it, and every
// Tern version before this one drops a subject with a single token there
// (leaderAnnounced: no account), so an older peer ignores it.

// metaLeaderSubject is the meta group's announcement subject.
const metaLeaderSubject = "$JSC.LEADER." + metaGroupName

// deposed announces that this server stopped leading the meta group in
// term (the raft clock's deposal, raft_wedge.go).
func (m *metaSM) deposed(term uint64) {
	s := m.jc.js.srv
	if sys := s.SystemAccount(); sys != nil {
		s.deliver(nil, sys, metaLeaderSubject, "", nil, encodeLeaderAnnouncement(s.Name(), term, true))
	}
}

// metaLeaderAnnounced handles the meta group's announcement from another
// server: a resignation wakes the local meta member if it follows that
// leader in that term asleep (raftGroup.leaderStopped). Nothing else is
// sent on it.
func (jc *jsCluster) metaLeaderAnnounced(msg []byte) {
	name, term, resigned, ok := decodeLeaderAnnouncement(string(msg))
	if !ok || !resigned || name == jc.js.srv.Name() {
		return
	}
	if g, _ := jc.metaGroup(); g != nil {
		g.leaderStopped(name, term)
	}
}

// metaDeposed reports whether this server's meta group still leads, as
// far as its stalled goroutine knows, a term whose leadership its server
// deposed (raft_wedge.go).
func (jc *jsCluster) metaDeposed() bool {
	g, _ := jc.metaGroup()
	return g != nil && g.deposedNow()
}

// metaReadOnly reports whether the meta call under prefix changes nothing.
func metaReadOnly(prefix string) bool { return heldMeta(prefix) && !heldWrite(prefix) }

// unknownStreamDeposed answers a local client's call on a stream this
// server does not know while its meta group is deposed. Its stalled group
// applies nothing, so a stream created through the new meta leader is
// unknown here, and that stream's leader (or the new meta leader, for a
// stream that does not exist) answers the call: a 10008 first would beat
// that answer, and say "not done" for a consumer created. A call that
// changes nothing gets 10008 if no answer passed within leaderGrace; one
// that changes something is left to the others.
func (r *apiRequest) unknownStreamDeposed(typ, prefix, stream string) (string, any, bool) {
	if !readOnly(prefix) {
		return "", nil, false
	}
	return typ, &unavailableLater{prefix: prefix, account: r.jsa.acc.Name, stream: stream}, true
}
