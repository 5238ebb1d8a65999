package raft

// A member that lost state it may have acknowledged (Config.Recovering:
// its log, snapshot or state machine was found damaged, or its disk was
// wiped, and the embedding server discarded what it had) cannot vote as
// if its log were what it once answered for. Entries it acknowledged may
// have been committed with its help, and a candidate whose log lacks them
// would win with its vote; if its term and vote were lost too, it may
// already have voted in the current term. So it abstains:
//
//   - it neither campaigns nor grants a vote or pre-vote until it has heard
//     from a leader and its log holds everything that leader had committed
//     then (the Commit of the first append it received): from then on its
//     log has every committed entry, as any member's, since a leader holds
//     all of them;
//   - afterwards it grants votes only for terms above that leader's term:
//     any vote it cast before the loss was in a term at most that one
//     unless an election above it was still undecided, which the
//     abstention makes unlikely but not impossible (ARCHITECTURE.md,
//     "Repair of a damaged replica").
//
// Its acknowledgements after the loss are honest (it persists before it
// answers), so it counts for commits as any follower does.
type recovery struct {
	active bool
	commit uint64 // the leader's commit when first heard; 0: not yet
	term   uint64 // that leader's term
}

// heard notes a message from the leader; committed is the local commit
// index after handling it.
func (rc *recovery) heard(m Message, committed uint64) {
	if !rc.active {
		return
	}
	if rc.commit == 0 && m.Type == MsgApp {
		rc.commit, rc.term = max(m.Commit, 1), m.Term
	}
	if rc.commit != 0 && committed >= rc.commit {
		rc.active = false
	}
}

// mayVote reports whether a vote for term may be granted.
func (rc *recovery) mayVote(term uint64) bool {
	return !rc.active && term > rc.term
}

// Recovering reports whether the node still abstains from elections
// (Config.Recovering) because it has not caught up with a leader yet.
func (n *Node) Recovering() bool { return n.r.rec.active }
