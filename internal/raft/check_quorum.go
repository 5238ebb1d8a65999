package raft

// What a leader's check-quorum found (Config.OnCheckQuorum): a leader
// that heard from no quorum within an election timeout steps down, and
// every group it led elects again. On a saturated machine that is a
// trigger of election storms (issue 20) besides the followers' own
// campaigns (campaign_reason.go); the counts tell the two apart.
type CheckQuorumOutcome uint8

const (
	// CheckQuorumStepDown: it stepped down, and node liveness said no
	// quorum of the members' servers is live.
	CheckQuorumStepDown CheckQuorumOutcome = iota
	// CheckQuorumStepDownLive: it stepped down although node liveness
	// said a quorum of the members' servers is live (their acks were
	// late only, or the leader read them late), and its wait ran out.
	CheckQuorumStepDownLive
	// CheckQuorumWait: it heard from no quorum, but node liveness said a
	// quorum is live, so it leads on for an election timeout more
	// (checkQuorumWaits).
	CheckQuorumWait
	checkQuorumOutcomes
)

var checkQuorumNames = [checkQuorumOutcomes]string{"step_down", "step_down_live", "wait"}

func (c CheckQuorumOutcome) String() string {
	if c < checkQuorumOutcomes {
		return checkQuorumNames[c]
	}
	return "unknown"
}

// Waiting for live followers. On a saturated machine a leader's followers
// may answer its heartbeats late although their servers are fine: the
// answers wait unread in a route buffer or the group's inbox, or the
// followers' servers, as busy, read and answer late. A leader that
// stepped down then at its check-quorum left every group it led to elect
// again, and the elections loaded the machine more (issue 20). So a
// leader that heard from no quorum within an election timeout while node
// liveness (Config.PeerHealth) says a quorum of the members' servers is
// live leads on, one election timeout at a time, up to
// Config.LiveLeaderWait ticks in all (the followers' own wait for a live
// leader, live_leader.go); an answer from a quorum within any of those
// timeouts ends the wait. Past it, or once liveness no longer says a
// quorum is live, it steps down as before. Without a wait configured it
// steps down at once as before.
//
// Why this gives the leader no read it had no right to. Leading on is
// what any leader does between two checks: committing still needs a
// quorum's acknowledgements, and a read index (read.go) still needs a
// quorum to answer a heartbeat round sent after the read was asked, so a
// leader deposed meanwhile (a member that stopped hearing from it grants
// votes after its election timeout, and elects another) serves neither:
// the members of the new term answer nothing of its term. A lease read
// (lease.go) needs a lease, and the lease is renewed only by a round
// that a quorum acknowledged, from the time that round was sent, for
// Config.Lease, which is shorter than an election timeout. A leader that
// heard from no quorum within the election timeout behind the check got
// no acknowledgement of a round sent in it, so its lease ended before
// the check, and it gets none during the wait but from a quorum's answer
// to a round sent then: the same proof as at any other time (no member
// that acknowledged that round votes for an election timeout after it
// took it). Check-quorum is not what bounds the lease; it frees a group
// whose leader is cut off, and this delays that only while liveness says
// the quorum's servers answer on their routes.

// checkQuorumWaits reports whether a leader that heard from no quorum
// within an election timeout leads on for another: a quorum's servers are
// live and the wait has not run out. It counts the timeout it waits.
func (r *raft) checkQuorumWaits() bool {
	if r.ls.cqWaited+r.t.electionTimeout > r.liveLeaderWait || !r.quorumLive() {
		return false
	}
	r.ls.cqWaited += r.t.electionTimeout
	return true
}

// quorumLive reports whether node liveness says a quorum of the members'
// servers is live (this node's own counts).
func (r *raft) quorumLive() bool {
	members := r.conf.current()
	live := 0
	for _, id := range members {
		if id == r.id || r.health(id).Live {
			live++
		}
	}
	return live >= quorum(len(members))
}

// noteCheckQuorum tells Config.OnCheckQuorum what the check found.
func (r *raft) noteCheckQuorum(c CheckQuorumOutcome) {
	if r.onCheckQuorum != nil {
		r.onCheckQuorum(c)
	}
}
