package raft

type voteResult uint8

const (
	votePending voteResult = iota
	voteWon
	voteLost
)

// campaign starts a pre-election (pre) or an election. transfer marks an
// election ordered by the leader (MsgTimeoutNow), which skips pre-vote and
// bypasses the voters' leases.
func (r *raft) campaign(pre, transfer bool) {
	if !r.promotable() {
		return
	}
	var voteType MessageType
	var term uint64
	if pre {
		r.becomePreCandidate()
		voteType, term = MsgPreVote, r.term+1
	} else {
		r.becomeCandidate()
		voteType, term = MsgVote, r.term
	}
	if r.poll(r.id, true) == voteWon {
		// A group of one.
		if pre {
			r.campaign(false, transfer)
		} else {
			r.becomeLeader()
		}
		return
	}
	last, lastTerm := r.log.lastIndex(), r.log.lastTerm()
	for _, id := range r.conf.current() {
		if id == r.id {
			continue
		}
		r.send(Message{Type: voteType, To: id, Term: term, Index: last, LogTerm: lastTerm, Transfer: transfer})
	}
}

// poll records a vote and tells whether the election is decided. Votes
// count only from members of the current configuration.
func (r *raft) poll(id ID, granted bool) voteResult {
	if _, seen := r.votes[id]; !seen {
		r.votes[id] = granted
	}
	members := r.conf.current()
	yes, no := 0, 0
	for _, m := range members {
		v, ok := r.votes[m]
		switch {
		case !ok:
		case v:
			yes++
		default:
			no++
		}
	}
	q := quorum(len(members))
	switch {
	case yes >= q:
		return voteWon
	case no > len(members)-q:
		return voteLost
	}
	return votePending
}

// handleVoteRequest answers MsgVote and MsgPreVote (after term handling).
func (r *raft) handleVoteRequest(m Message) {
	respType := MsgVoteResp
	if m.Type == MsgPreVote {
		respType = MsgPreVoteResp
	}
	canVote := r.rec.mayVote(m.Term, LogPosition{Term: m.LogTerm, Index: m.Index}) && (r.vote == m.From ||
		r.vote == None && r.lead == None ||
		m.Type == MsgPreVote && m.Term > r.term)
	if canVote && r.log.isUpToDate(m.Index, m.LogTerm) {
		r.send(Message{Type: respType, To: m.From, Term: m.Term})
		if m.Type == MsgVote {
			r.t.electionElapsed = 0
			r.vote, r.voteTransfer = m.From, m.Transfer
		} else {
			r.rankGranted()
		}
		return
	}
	r.send(Message{Type: respType, To: m.From, Term: r.term, Reject: true})
}

func (r *raft) stepCandidate(m Message) {
	switch m.Type {
	case MsgApp, MsgHeartbeat, MsgSnap:
		// A leader exists for our term.
		r.becomeFollower(m.Term, m.From)
		r.stepFollower(m)
	case MsgPreVoteResp:
		if r.role == PreCandidate {
			r.handleVoteResp(m)
		}
	case MsgVoteResp:
		if r.role == Candidate {
			r.handleVoteResp(m)
		}
	}
}

func (r *raft) handleVoteResp(m Message) {
	switch r.poll(m.From, !m.Reject) {
	case voteWon:
		if r.role == PreCandidate {
			r.campaign(false, false)
		} else {
			r.becomeLeader()
		}
	case voteLost:
		r.becomeFollower(r.term, None)
	}
}
