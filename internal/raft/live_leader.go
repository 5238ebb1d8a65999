package raft

// Waiting for a live leader: on a saturated machine a follower's election
// clock can run out although its leader is fine. The heartbeats were sent
// but wait unread in its server's route buffer or in the group's inbox,
// or the leader's server, as busy, sends them late. A 10,000-stream server
// restarted on a busy machine set off an election storm that way: followers
// of awake groups campaigned by the thousand, each election woke more
// groups and loaded the machine more, and the restarted server took 27 to
// 75 s instead of 5 to be back in every group (issue 20).
//
// So a follower whose election timeout ran out while node liveness
// (Config.PeerHealth) says its leader's server is live, that is, that
// server was heard from within the last second on the route that carries
// the leader's heartbeats, waits up to Config.LiveLeaderWait ticks more
// before it campaigns: a heartbeat that arrives meanwhile resets its clock
// as any would. Only its own campaign waits. Its lease ran out at the
// election timeout as before, so it grants the votes Raft lets it grant
// (pre-vote and check-quorum unchanged), and a leader whose server died
// is replaced as fast as before: liveness says so, and the survivors
// campaign in turn (ranked.go), which this leaves alone. A leader that
// said it stopped (Node.LeaderStopped: its group halted, its server runs
// on) is not waited for either. A leader stuck while its server lives is
// replaced LiveLeaderWait ticks later than without the wait.

//
// A leadership transfer's target is waited for the same way. The leader
// balancer hands leaderships to a server restarted on a saturated machine
// (issue 20); the target campaigns when it reads the leader's order, and
// its votes may come back to it late. A follower that granted its vote to
// a transfer's candidate (Message.Transfer) knows no leader until the
// candidate's first heartbeat, and campaigned at its election timeout:
// it and the busy target then contended, election after election. So
// while the candidate's server is live it waits LiveLeaderWait ticks more,
// as for a leader. The old leader's resignation (LeaderStopped in a later
// term than it led) does not cut the wait short either (quiesce.go).

// liveLeaderWaits reports whether a follower whose election timeout ran
// out waits before campaigning: its leader's server (or, with no leader,
// that of the transfer candidate it voted for) is live, the leader did not
// say it stopped, and the wait has not run out.
func (r *raft) liveLeaderWaits() bool {
	if r.liveLeaderWait <= 0 || r.role != Follower || r.t.ranked ||
		r.t.electionElapsed >= r.t.randomizedTimeout+r.liveLeaderWait {
		return false
	}
	switch {
	case r.lead != None:
		return !r.leadStopped && r.health(r.lead).Live
	case r.voteTransfer && r.vote != None:
		return r.health(r.vote).Live
	}
	return false
}
