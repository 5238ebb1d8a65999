package raft

// Quiescence: an idle group costs nothing. A leader whose log is
// committed, applied and held by every live member, and to which nothing
// was proposed for an election timeout, sends one last heartbeat marked
// Quiesce (carrying its commit index) and stops ticking; a follower that
// receives it and holds the whole log committed stops ticking too, so
// it never campaigns. Whether the leader's server is alive is then the
// embedding server's business (one liveness signal per pair of servers,
// Config.PeerHealth): when it changes, the server calls LivenessChanged,
// and followers whose leader's server died wake and elect as usual.
// Anything else wakes a quiet node: a message, a proposal, a read, a
// membership change, a transfer, a campaign. A follower woken by anyone
// but its leader tells its leader (an empty heartbeat response), so that
// the leader's heartbeats resume and keep pre-vote and check-quorum as
// they are without quiescence.

// PeerHealth is what the embedding server knows of a peer's server.
type PeerHealth struct {
	// Live: the peer's server is reachable (its node heartbeats arrive).
	Live bool
	// Quiesces: the peer's server knows quiescence (a follower that does
	// not would campaign once heartbeats stop).
	Quiesces bool
	// Epoch changes when the peer's server reconnected (it may have
	// restarted in between, unseen): a quiet leader wakes to reach it.
	Epoch uint64
}

// health is what is known of peer id's server.
func (r *raft) health(id ID) PeerHealth {
	if r.peerHealth == nil {
		return PeerHealth{Live: true, Quiesces: true}
	}
	return r.peerHealth(id)
}

// A member that comes back says hello (an empty heartbeat response to
// every other member) as its node starts from a stored state, and, when
// it cannot campaign (recovering), every election timeout in which it
// hears from no leader (one that can campaign does, and its pre-vote
// wakes a quiet leader as well). A quiet leader wakes on it and catches
// the member up: its wake-up when the member's server came back may have
// reached that server before the group started there, kept a second and
// dropped (raft_early.go), and a leader that did not see the server go
// (it restarted while the leader was awake) took the member's answers
// before the restart for its state and went quiet.

// hello tells every other member that this node runs (a leader hearing
// it wakes and catches it up; a follower ignores it).
func (r *raft) hello() {
	if !r.promotable() {
		return
	}
	for _, id := range r.conf.current() {
		if id != r.id {
			r.send(Message{Type: MsgHeartbeatResp, To: id})
		}
	}
}

// maybeQuiesce is called by the leader when a heartbeat is due: it quiesces
// the group and reports true when the group is idle. Only members known to
// hold the whole log get the quiesce heartbeat: one behind it (down, but
// its server may be back already, the group started there before the
// leader hears of it) would take the commit index it carries for the
// leader's last and fall asleep behind.
func (r *raft) maybeQuiesce() bool {
	if !r.quiesce || !r.idle() || !r.peersQuiet() {
		return false
	}
	last := r.log.lastIndex()
	for _, id := range r.ls.ids {
		if id != r.id {
			pr := r.ls.prs[id]
			pr.recentActive = !pr.down // while quiet, node liveness says who is active
			if pr.match == last {
				r.send(Message{Type: MsgHeartbeat, To: id, Commit: r.log.committed,
					Index: r.ls.reads.round, Quiesce: true})
			}
		}
	}
	r.quiet = true
	r.dropLease() // a quiet follower may forget us at once (livenessChanged)
	return true
}

// idle reports whether nothing is under way in the leader's log: no
// proposal or read for an election timeout, everything committed and applied,
// no read, transfer or removed peer waiting.
func (r *raft) idle() bool {
	ls, last := r.ls, r.log.lastIndex()
	return ls.idleTicks >= r.t.electionTimeout && ls.transferee == None &&
		len(ls.reads.pending) == 0 && !ls.reads.dirty && !ls.commitDirty && !ls.commitOwed &&
		r.log.committed == last && r.log.applied == last &&
		r.log.u.snap == nil && len(r.log.u.ents) == 0 &&
		len(ls.ids) == len(r.conf.current())
}

// peersQuiet reports whether every member whose server is live knows
// quiescence, holds the whole log and answered since the leader last
// woke, and whether those make a quorum (a leader cut off from its
// quorum must keep ticking, so that check-quorum deposes it). It notes
// which peers are down, so that LivenessChanged sees them come back.
func (r *raft) peersQuiet() bool {
	members := r.conf.current()
	last, ok := r.log.lastIndex(), 0
	for _, id := range members {
		if id == r.id {
			ok++
			continue
		}
		pr := r.ls.prs[id]
		if pr == nil {
			return false
		}
		h := r.health(id)
		pr.down, pr.epoch = !h.Live, h.Epoch
		if pr.down {
			continue
		}
		if !h.Quiesces || pr.match != last || !pr.fresh {
			return false
		}
		ok++
	}
	return ok >= quorum(len(members))
}

// unquiet wakes a quiet node with fresh timers: a follower starts a new
// election timeout (it keeps its leader's lease meanwhile); a leader a new
// check-quorum round, counting every member active, and it quiesces again
// only once every live member answered it since.
func (r *raft) unquiet() {
	if !r.quiet {
		return
	}
	r.quiet = false
	r.t.electionElapsed = 0
	r.t.randomizedTimeout = r.t.electionTimeout + r.rand(r.t.electionTimeout)
	if r.role != Leader {
		return
	}
	r.t.heartbeatElapsed = r.t.heartbeatTimeout - 1 // heartbeat at the next tick
	for _, pr := range r.ls.prs {
		pr.recentActive, pr.fresh = true, false
	}
}

// wakeLeader wakes a quiet leader for a call that needs it (a follower
// stays quiet: what it forwards wakes its leader).
func (r *raft) wakeLeader() {
	if r.role == Leader {
		r.unquiet()
	}
}

// wakeOn wakes a quiet node for message m and reports whom to tell: a
// follower woken by anyone but its leader wakes its leader too.
func (r *raft) wakeOn(m Message) (tell ID) {
	if !r.quiet {
		return None
	}
	if m.Type == MsgHeartbeat && m.Quiesce && m.From == r.lead && m.Term == r.term {
		return None // the leader repeats itself
	}
	if m.Type == MsgHeartbeatResp && r.role != Leader {
		return None // a member's hello: news to its leader only
	}
	r.unquiet()
	if r.role == Follower && m.From != r.lead {
		return r.lead
	}
	return None
}

// tellLeader wakes a quiet leader: an empty heartbeat response is news to
// nobody but makes the leader tick (and heartbeat) again.
func (r *raft) tellLeader(lead ID) {
	if lead != None && r.role == Follower && r.lead == lead {
		r.send(Message{Type: MsgHeartbeatResp, To: lead})
	}
}

// quiesceFollower quiets a follower told by its leader's quiesce
// heartbeat that the group is idle, if it holds the whole log committed;
// it reports whether it did (then it does not answer the heartbeat).
func (r *raft) quiesceFollower(m Message) bool {
	if !m.Quiesce || r.lead != m.From || r.log.committed != m.Commit || r.log.lastIndex() != m.Commit ||
		m.Index < r.hbRound { // sent before a round we answered: the leader woke since (lease.go)
		return false
	}
	r.quiet = true
	r.leadQuiet = true
	return true
}

// quiesceRefused handles a follower that refused a quiesce heartbeat: it
// does not hold the log the leader believes it holds (a machine crash
// lost its unsynced tail). Probing it finds what it has: its rejection
// of the probe lowers its match, and it is caught up.
func (r *raft) quiesceRefused(pr *progress) {
	pr.becomeProbe()
	pr.sendEmpty = true
	r.ls.dirty = true
}

// leaderStopped wakes a quiet follower whose leader said it stopped
// leading (Node.LeaderStopped). If it stopped in the term it led (its
// group halted, it was removed, it lost its quorum), nobody else
// campaigns: any follower of it campaigns at its election timeout
// without waiting for the leader's live server (live_leader.go). If it
// stopped in a later term, a candidate's request made it step down (a
// leadership transfer, most often): that candidate asks this follower
// too, so the follower waits for it as it would for its leader, instead
// of contending with a transfer target still busy with its election.
func (r *raft) leaderStopped(lead ID, term uint64) {
	if r.role == Follower && r.lead == lead && r.term <= term {
		r.leadStopped = r.term == term // no wait for its live server (live_leader.go)
		r.unquiet()
	}
}

// livenessChanged re-reads the peers' health (Node.LivenessChanged).
func (r *raft) livenessChanged() {
	if r.role == Leader {
		if t := r.ls.transferee; t != None && !r.health(t).Live {
			// Its server is gone: it will not take over, and proposals
			// wait for the transfer to end; the caller may pick another.
			r.ls.transferee = None
		}
		if !r.quiet {
			return // an awake leader hears from its peers anyway
		}
		back := false
		for _, id := range r.ls.ids {
			if pr := r.ls.prs[id]; id != r.id {
				if h := r.health(id); h.Live && (pr.down || h.Epoch != pr.epoch) {
					back = true // a returning peer must hear from us: it may campaign
				}
			}
		}
		if back || !r.peersQuiet() {
			r.unquiet()
		} else {
			for _, pr := range r.ls.prs {
				pr.recentActive = !pr.down
			}
		}
		return
	}
	if r.role != Follower || r.lead == None || r.health(r.lead).Live {
		return
	}
	if r.quiet || r.leadQuiet {
		// The leader's server is gone: grant votes at once, with no lease
		// of the dead leader to protect (it went quiet without one), and
		// campaign in turn from now (ranked.go). A follower woken since by
		// another member's message (a survivor that learned of the death
		// first asked for its vote) had only the quiesce heartbeat from
		// its leader: it forgets it too, or it would refuse every vote for
		// an election timeout, and answers the pre-vote it refused.
		r.unquiet()
		r.lead = None
		r.leadQuiet = false
		r.t.electionElapsed = 0
		r.rankTimer(0)
		r.answerHeldPreVote()
		return
	}
	// An awake leader's lease holds: campaign in turn once it ran out.
	r.rankTimer(r.t.electionTimeout)
}
