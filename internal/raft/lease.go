package raft

import "time"

// Leader lease (Config.Lease): a leader that a quorum acknowledged
// recently enough answers a read at once with its commit index, without a
// heartbeat round of its own (read.go). The lease is measured on the
// leader's clock (Config.Now, a monotonic clock): it starts when a
// heartbeat round that a quorum acknowledged was sent, and lasts
// Config.Lease. It is checked when the read is asked (Node.LeaseRead, a
// follower's MsgReadIndex), so a process paused past its lease finds it
// gone when it wakes: its clock moved on meanwhile.
//
// Why no other leader can exist while the lease holds. A follower that
// acknowledged round R took the heartbeat at a time after the leader sent
// it, and set its election clock to zero then. Until it has counted
// ElectionTicks ticks since, it grants no vote or pre-vote (inLease, with
// CheckQuorum) and does not campaign (its timeout is at least
// ElectionTicks). Its leader is forgotten (lead = None) only
//   - when it moves to a higher term, after which it acknowledges none of
//     this leader's heartbeats, so no round it acknowledges counts;
//   - by a leader transfer: the leader that starts one holds no lease
//     again in its term (transferLeadership);
//   - by node liveness while quiet, or while the last word it had from
//     its leader was the quiesce heartbeat (woken since by another
//     member): a quiet leader holds no lease, and only rounds sent after
//     it last woke renew it (quiesce.go); a follower takes no quiesce
//     heartbeat older than a round it answered, and answers none;
//   - by a restart: a node that may have acknowledged a leader before it
//     stopped (it has a stored hard state, or lost it: Recovering) grants
//     no vote for its first election timeout (startGuard).
// A new leader needs a quorum of votes, and every quorum shares a member
// with the quorum that acknowledged R. So no new leader is elected before
// that member counted ElectionTicks ticks after R was sent. The driver
// must make those ticks span more than Lease of real time, with a margin
// for the two clocks' rates (the server's tick argument: server/raft.go).

// lease is the leader's lease state (part of leaderState).
type lease struct {
	sent   [leaseRounds]roundSent // when recent rounds were sent, by round % leaseRounds
	from   uint64                 // only rounds after this one renew the lease
	start  time.Time              // the lease runs from here (zero: none)
	barred bool                   // a transfer was started: no lease in this term
}

// roundSent is when heartbeat round was sent.
type roundSent struct {
	round uint64
	at    time.Time
}

// leaseRounds is how many rounds' send times the leader keeps; an
// acknowledgement of an older round renews nothing.
const leaseRounds = 16

// noteRound records that round was sent now.
func (r *raft) noteRound(round uint64) {
	if r.lease <= 0 {
		return
	}
	r.ls.lease.sent[round%leaseRounds] = roundSent{round: round, at: r.now()}
}

// renewLease moves the lease's start to the send time of the latest
// round a quorum acknowledged.
func (r *raft) renewLease(confirmed uint64) {
	l := &r.ls.lease
	if r.lease <= 0 || confirmed <= l.from {
		return
	}
	s := l.sent[confirmed%leaseRounds]
	if s.round != confirmed || s.at.Before(l.start) {
		return
	}
	l.start = s.at
}

// dropLease ends the lease: only rounds sent from now on renew it.
func (r *raft) dropLease() {
	if r.ls == nil {
		return
	}
	r.ls.lease.from = r.ls.reads.round
	r.ls.lease.start = time.Time{}
}

// leaseValid reports whether this node leads under a lease that holds now.
func (r *raft) leaseValid() bool {
	until, ok := r.leaseEnd()
	return ok && r.now().Before(until)
}

// leaseEnd is when the lease ends (ok false: this node holds none).
func (r *raft) leaseEnd() (until time.Time, ok bool) {
	if r.lease <= 0 || r.role != Leader || r.quiet {
		return time.Time{}, false
	}
	l := &r.ls.lease
	if l.barred || r.ls.transferee != None || l.start.IsZero() {
		return time.Time{}, false
	}
	return l.start.Add(r.lease), true
}

// leaseRead answers a read at once when the leader holds a valid lease and
// committed its NoOp: the read index is the commit index now. A group
// being read stays awake (idle counts reads as activity): a quiet leader
// holds no lease, and each wake would cost a heartbeat round.
func (r *raft) leaseRead() (uint64, bool) {
	if !r.leaseValid() || !r.committedInTerm() {
		return 0, false
	}
	r.ls.idleTicks = 0
	return r.log.committed, true
}
