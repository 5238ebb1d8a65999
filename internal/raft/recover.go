package raft

// A member that lost state it may have acknowledged (Config.Recovering:
// its log, snapshot or state machine was found damaged, or its disk was
// wiped, and the embedding server discarded what it had) cannot vote as
// if its log were what it once answered for. Entries it acknowledged may
// have been committed with its help, and a candidate whose log lacks them
// would win with its vote; if its term and vote were lost too, it may
// already have voted in the current term.
//
// When the embedder still knew the position of the last entry of the
// discarded log (Config.RecoveringFloor: the log itself was readable, the
// damage was in the state machine's files or a snapshot), and kept the
// term and vote, the member votes as if it still held that log:
//
//   - it grants a vote or pre-vote, under the usual term and vote rules,
//     only to a candidate whose log is at least as up to date (Raft
//     §5.4.1) as both its own log and the floor. That is exactly the
//     election restriction of the log it lost, so Raft's safety argument
//     holds unchanged. Let e be an entry committed in term T with this
//     member's acknowledgement, and L the log that held e when it voted
//     (the lost one, whose last entry is the floor, or the one it holds
//     now, which has everything it acknowledged since the loss; an entry
//     truncated from either was not committed, as no leader truncates a
//     committed entry). A candidate whose last entry is in a term above
//     L's last term got it from the leader of that term, which (Leader
//     Completeness, by induction on terms, L's last term being at least
//     T) holds e; a candidate with L's last term and an index at least
//     L's holds L's whole prefix, as both got their entries of that term
//     from its one leader in order. Either way the candidate holds e.
//     The member's vote therefore never elects a leader lacking an entry
//     that needed its acknowledgement to commit, and it never votes twice
//     in a term, since its vote is kept. So it may help make a quorum:
//     a group whose other healthy members are not a quorum by themselves
//     (one member down, or a membership change in flight that left two
//     voters) stays live.
//   - it does not campaign while its own log is behind the floor (its log
//     lacks entries it acknowledged, and its own up-to-date check would
//     not protect them); once its log reaches the floor (it holds
//     entries from a leader at or past it), its log holds every committed
//     entry the lost one held (the argument above, with its log as the
//     candidate) and it is an ordinary member again.
//
// Without a floor (a wiped disk or an unreadable log: nothing it once
// acknowledged is known, and maybe not its vote) it abstains:
//
//   - it neither campaigns nor grants a vote or pre-vote until it has heard
//     from a leader and its log holds everything that leader had committed
//     then (the Commit of the first append it received): from then on its
//     log has every committed entry, as any member's, since a leader holds
//     all of them (but for an acknowledgement of the lost log still on its
//     way to that leader, which may commit an entry after that append: the
//     floor exists to close that window);
//   - afterwards it grants votes only for terms above that leader's term:
//     any vote it cast before the loss was in a term at most that one
//     unless an election above it was still undecided, which the
//     abstention makes unlikely but not impossible (ARCHITECTURE.md,
//     "Repair of a damaged replica").
//   - A group whose other healthy members are no quorum waits for one more
//     of them: no vote of this member can be proved safe.
//
// Its acknowledgements after the loss are honest (it persists before it
// answers), so it counts for commits as any follower does.
type recovery struct {
	active bool
	floor  LogPosition // the lost log's last entry; zero: unknown
	commit uint64      // the leader's commit when first heard; 0: not yet
	term   uint64      // that leader's term
}

// LogPosition is the position of a log entry: its term and index.
type LogPosition struct {
	Term, Index uint64
}

// atLeast reports whether a log ending at p is at least as up to date as
// one ending at q (Raft §5.4.1).
func (p LogPosition) atLeast(q LogPosition) bool {
	return p.Term > q.Term || p.Term == q.Term && p.Index >= q.Index
}

// Max returns the more up-to-date of p and q.
func (p LogPosition) Max(q LogPosition) LogPosition {
	if p.atLeast(q) {
		return p
	}
	return q
}

// IsZero reports whether p names no entry.
func (p LogPosition) IsZero() bool { return p == LogPosition{} }

// lastPosition is the position of the log's last entry.
func (r *raft) lastPosition() LogPosition {
	return LogPosition{Term: r.log.lastTerm(), Index: r.log.lastIndex()}
}

// heard notes a message from the leader; committed is the local commit
// index and last the local last entry after handling it.
func (rc *recovery) heard(m Message, committed uint64, last LogPosition) {
	if !rc.active {
		return
	}
	if !rc.floor.IsZero() {
		rc.reached(last)
		return
	}
	if rc.commit == 0 && m.Type == MsgApp {
		rc.commit, rc.term = max(m.Commit, 1), m.Term
	}
	if rc.commit != 0 && committed >= rc.commit {
		rc.active = false
	}
}

// reached ends a recovery with a floor once the log's last entry is at or
// past it.
func (rc *recovery) reached(last LogPosition) {
	if rc.active && !rc.floor.IsZero() && last.atLeast(rc.floor) {
		rc.active = false
	}
}

// mayVote reports whether a vote for term, for a candidate whose log ends
// at cand, may be granted (the usual term, vote and up-to-date rules
// apply besides).
func (rc *recovery) mayVote(term uint64, cand LogPosition) bool {
	switch {
	case !rc.active && rc.floor.IsZero():
		return term > rc.term
	case !rc.floor.IsZero():
		return cand.atLeast(rc.floor) // harmless once past it
	}
	return false
}

// mayCampaign reports whether the node may start an election.
func (rc *recovery) mayCampaign() bool { return !rc.active }

// Recovering reports whether the node is still recovering
// (Config.Recovering): without a floor, it has not caught up with a
// leader yet; with one, its log has not reached the floor yet.
func (n *Node) Recovering() bool { return n.r.rec.active }
