package raft

import (
	"fmt"
	"slices"
	"time"
)

// timers counts ticks. Followers and candidates use electionElapsed against
// a randomized timeout; the leader uses it for check-quorum rounds and
// transfer time-outs, and heartbeatElapsed for heartbeats.
type timers struct {
	electionElapsed   int
	heartbeatElapsed  int
	electionTimeout   int
	heartbeatTimeout  int
	randomizedTimeout int
	// ranked: randomizedTimeout is this member's turn after its leader's
	// server died (ranked.go), not a random draw.
	ranked bool
}

// leaderState exists only while the node leads.
type leaderState struct {
	prs         map[ID]*progress // every member, self included, and removed peers still being told
	ids         []ID             // keys of prs, sorted
	transferee  ID               // leader transfer in progress, or None
	noopIndex   uint64           // index of the NoOp entry of this term
	uncommitted uint64           // bytes proposed and not yet applied
	dirty       bool             // appends may need sending at the next Ready
	commitDirty bool             // the commit index moved: tell everyone
	commitOwed  bool             // it moved, and telling is held back (Config.DeferCommit)
	reads       readQueue        // read requests awaiting a heartbeat round
	lease       lease            // reads answered without a round (lease.go)
	scratch     []uint64
	idleTicks   int // ticks since the leader last appended an entry or took a read
	cqWaited    int // ticks its check-quorum waited for live followers (check_quorum.go)
	// firstTerm: the leader of term 1 (Config.LeadsFirstTerm), which took
	// its term without hearing from anyone (quorumActive); graceRounds
	// counts the check-quorum rounds it was granted so.
	firstTerm   bool
	graceRounds int
}

// raft is the consensus state machine behind Node.
type raft struct {
	id   ID
	term uint64
	vote ID
	lead ID
	role Role

	log   *raftLog
	conf  confTracker
	msgs  []Message
	votes map[ID]bool
	ls    *leaderState
	t     timers
	// readStates are answered reads for the next Ready.
	readStates []ReadState

	preVote        bool
	checkQuorum    bool
	maxInflight    int
	maxInflightB   uint64
	maxBatch       uint64
	maxUncommitted uint64
	rand           func(int) int
	rec            recovery

	quiesce     bool                // idle groups may quiesce (quiesce.go)
	deferCommit bool                // Config.DeferCommit
	quiet       bool                // quiescent: ticks do nothing
	leadQuiet   bool                // the last word of our leader was its quiesce heartbeat
	heldPreVote *Message            // a pre-vote refused for a leader that was quiet (ranked.go)
	seed        uint64              // Config.Seed
	peerHealth  func(ID) PeerHealth // nil: every peer live and quiescing

	lease      time.Duration    // leader lease length, 0: none (lease.go)
	now        func() time.Time // the lease's clock
	startGuard bool             // no votes until an election timeout passed since start
	hbRound    uint64           // latest heartbeat round taken from the leader

	liveLeaderWait int                      // Config.LiveLeaderWait (live_leader.go)
	onCampaign     func(CampaignReason, ID) // Config.OnCampaign (campaign_reason.go)
	onCheckQuorum  func(CheckQuorumOutcome) // Config.OnCheckQuorum (check_quorum.go)
	leadStopped    bool                     // our leader said it stopped leading (Node.LeaderStopped)
	voteTransfer   bool                     // our vote of this term went to a transfer's candidate (live_leader.go)
}

func newRaft(cfg Config, st Storage) (*raft, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	hs, peers, err := st.InitialState()
	if err != nil {
		return nil, err
	}
	r := &raft{
		id:             cfg.ID,
		log:            newRaftLog(st, uint64(cfg.MaxApplyBytes)),
		preVote:        cfg.PreVote,
		checkQuorum:    cfg.CheckQuorum,
		maxInflight:    cfg.MaxInflight,
		maxInflightB:   uint64(cfg.MaxInflightBytes),
		maxBatch:       uint64(cfg.MaxBatchBytes),
		maxUncommitted: uint64(cfg.MaxUncommittedBytes),
		rand:           cfg.Rand,
		rec:            recovery{active: cfg.Recovering, floor: cfg.RecoveringFloor},
		quiesce:        cfg.Quiesce,
		deferCommit:    cfg.DeferCommit,
		peerHealth:     cfg.PeerHealth,
		seed:           cfg.Seed,
		lease:          cfg.Lease,
		now:            cfg.Now,
		liveLeaderWait: cfg.LiveLeaderWait,
		onCampaign:     cfg.OnCampaign,
		onCheckQuorum:  cfg.OnCheckQuorum,
		t:              timers{electionTimeout: cfg.ElectionTicks, heartbeatTimeout: cfg.HeartbeatTicks},
	}
	r.conf.reset(r.log.firstIndex()-1, peers)
	if err := r.loadConfEntries(); err != nil {
		return nil, err
	}
	if len(r.conf.current()) == 0 && len(cfg.Peers) > 0 {
		if r.log.lastIndex() == 0 && hs.IsEmpty() {
			r.bootstrap(cfg.Peers)
			r.startGuard = r.lease > 0 && cfg.Recovering
			if cfg.LeadsFirstTerm && !cfg.Recovering && r.promotable() {
				r.leadFirstTerm()
			}
			if cfg.Recovering {
				r.hello() // it founds the group again and cannot campaign
			}
			return r, nil
		}
		// A storage prepared outside the node, without membership.
		r.conf.reset(r.log.firstIndex()-1, cfg.Peers)
	}
	if !hs.IsEmpty() {
		if hs.Commit > r.log.lastIndex() {
			return nil, fmt.Errorf("raft: stored commit %d is past the last index %d", hs.Commit, r.log.lastIndex())
		}
		r.term, r.vote = hs.Term, hs.Vote
		r.log.committed = max(r.log.committed, hs.Commit)
	}
	if cfg.Applied > 0 {
		if cfg.Applied > r.log.committed {
			return nil, fmt.Errorf("raft: applied %d is past the commit %d", cfg.Applied, r.log.committed)
		}
		r.log.applied = max(r.log.applied, cfg.Applied)
	}
	r.rec.reached(r.lastPosition()) // a restart while recovering, its log already past the floor
	r.becomeFollower(r.term, None)
	// A node that may have acknowledged a leader's heartbeat before it
	// stopped must not help elect another while that leader's lease may
	// hold (lease.go).
	r.startGuard = r.lease > 0 && (!hs.IsEmpty() || cfg.Recovering)
	if !hs.IsEmpty() || cfg.Recovering {
		r.hello() // a member back: its leader may be quiet (quiesce.go)
	}
	return r, nil
}

// bootstrap starts a new group: the initial members are written to the log
// as committed AddPeer entries of term 1, the same on every founding node,
// so that a peer joining later learns them from the log like any change.
func (r *raft) bootstrap(peers []ID) {
	r.becomeFollower(1, None)
	ids := sortedPeers(peers)
	ents := make([]Entry, len(ids))
	for i, id := range ids {
		ents[i] = Entry{Term: 1, Index: uint64(i + 1), Type: EntryConfChange,
			Data: ConfChange{Type: AddPeer, ID: id}.Marshal()}
	}
	r.appendToLog(ents)
	r.log.committed = uint64(len(ents))
}

// loadConfEntries replays the membership changes found in stored entries.
func (r *raft) loadConfEntries() error {
	lo, hi := r.log.firstIndex(), r.log.lastIndex()+1
	for lo < hi {
		ents, err := r.log.st.Entries(lo, hi, 1<<20)
		if err != nil {
			return fmt.Errorf("raft: reading stored entries: %w", err)
		}
		if len(ents) == 0 {
			return fmt.Errorf("raft: storage returned no entries for [%d,%d)", lo, hi)
		}
		for i := range ents {
			if ents[i].Type == EntryConfChange {
				r.conf.add(&ents[i])
			}
		}
		lo = ents[len(ents)-1].Index + 1
	}
	return nil
}

func (r *raft) hardState() HardState {
	return HardState{Term: r.term, Vote: r.vote, Commit: r.log.committed}
}

func (r *raft) softState() SoftState {
	ready := r.role == Leader && r.log.applied >= r.ls.noopIndex
	return SoftState{Lead: r.lead, Role: r.role, Term: r.term, LeaderReady: ready}
}

// promotable reports whether this node may campaign: only members do.
func (r *raft) promotable() bool { return r.conf.contains(r.id) }

func (r *raft) send(m Message) {
	m.From = r.id
	if m.Term == 0 {
		m.Term = r.term
	}
	r.msgs = append(r.msgs, m)
}

func (r *raft) reset(term uint64) {
	if r.term != term {
		r.term = term
		r.vote = None
	}
	r.lead = None
	r.hbRound = 0
	r.t.electionElapsed = 0
	r.t.heartbeatElapsed = 0
	r.t.randomizedTimeout = r.t.electionTimeout + r.rand(r.t.electionTimeout)
	r.t.ranked = false
	r.votes = nil
	r.ls = nil
	r.quiet = false
	r.leadQuiet = false
	r.leadStopped = false
	r.voteTransfer = false
	r.heldPreVote = nil
}

func (r *raft) becomeFollower(term uint64, lead ID) {
	r.reset(term)
	r.lead = lead
	r.role = Follower
}

// becomePreCandidate changes neither the term nor the vote.
func (r *raft) becomePreCandidate() {
	if r.role == Leader {
		panic("raft: leader cannot become pre-candidate")
	}
	r.role = PreCandidate
	r.lead = None
	r.votes = map[ID]bool{}
}

func (r *raft) becomeCandidate() {
	if r.role == Leader {
		panic("raft: leader cannot become candidate")
	}
	r.reset(r.term + 1)
	r.vote = r.id
	r.role = Candidate
	r.votes = map[ID]bool{}
}

func (r *raft) becomeLeader() {
	if r.role == Follower {
		panic("raft: follower cannot become leader without an election")
	}
	r.takeLead()
	r.appendAsLeader([]Entry{{Type: EntryNoOp}})
	r.ls.noopIndex = r.log.lastIndex()
}

// leadFirstTerm makes a founding member the leader of term 1, which no
// election can reach (Config.LeadsFirstTerm). Its log holds the committed
// membership entries of term 1, so it has committed an entry of its term
// already and needs no no-op: it serves once it applied them. The vote it
// records for itself changes its hard state, so the first Ready is
// durable before its appends leave (Ready.LeaderMayPipeline); empty
// appends tell the followers at once who leads.
func (r *raft) leadFirstTerm() {
	r.vote = r.id
	r.takeLead()
	r.ls.firstTerm = true
	r.ls.noopIndex = r.log.lastIndex()
	for _, id := range r.ls.ids {
		if id != r.id {
			r.ls.prs[id].sendEmpty = true
		}
	}
	r.ls.dirty = true
}

// takeLead sets up the leader's state for the current term.
func (r *raft) takeLead() {
	r.reset(r.term)
	r.lead = r.id
	r.role = Leader
	last := r.log.lastIndex()
	r.ls = &leaderState{prs: map[ID]*progress{}}
	for _, id := range r.conf.current() {
		r.ls.prs[id] = newProgress(last+1, r.maxInflight, r.maxInflightB)
	}
	if r.ls.prs[r.id] == nil {
		r.ls.prs[r.id] = newProgress(last+1, r.maxInflight, r.maxInflightB)
	}
	r.ls.ids = sortedKeys(r.ls.prs)
	self := r.ls.prs[r.id]
	self.match = r.log.durableIndex()
	self.becomeReplicate()
}

// appendToLog appends entries (a leader's own or received ones) and keeps
// the membership in step with the log.
func (r *raft) appendToLog(ents []Entry) {
	if len(ents) == 0 {
		return
	}
	changed := r.conf.truncateFrom(ents[0].Index)
	r.log.append(ents)
	for i := range ents {
		if ents[i].Type == EntryConfChange {
			r.conf.add(&ents[i])
			changed = true
		}
	}
	if changed && r.role == Leader {
		r.syncProgress()
	}
}

// syncProgress gives the leader a progress for every member. Peers that
// left keep theirs until they have the entry that removed them (so that
// they know not to campaign) or stop answering; see dropRemoved.
func (r *raft) syncProgress() {
	for _, id := range r.conf.current() {
		if r.ls.prs[id] == nil {
			r.ls.prs[id] = newProgress(r.log.lastIndex()+1, r.maxInflight, r.maxInflightB)
		}
	}
	if t := r.ls.transferee; t != None && !r.conf.contains(t) {
		r.ls.transferee = None
	}
	r.ls.ids = sortedKeys(r.ls.prs)
	r.ls.dirty = true
}

// dropRemoved forgets removed peers once their removal is committed and
// they hold it, or once they have been silent for two election timeouts.
func (r *raft) dropRemoved() {
	if len(r.ls.ids) == len(r.conf.current()) {
		return
	}
	confIndex := r.conf.lastIndex()
	if r.log.committed < confIndex {
		return
	}
	for _, id := range r.ls.ids {
		pr := r.ls.prs[id]
		if id != r.id && !r.conf.contains(id) && (pr.match >= confIndex || pr.idleTicks > 2*r.t.electionTimeout) {
			delete(r.ls.prs, id)
		}
	}
	r.ls.ids = sortedKeys(r.ls.prs)
}

func sortedKeys(m map[ID]*progress) []ID {
	ids := make([]ID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (r *raft) tick() {
	if r.quiet {
		return
	}
	if r.role == Leader {
		r.tickLeader()
		return
	}
	r.t.electionElapsed++
	if r.t.electionElapsed >= r.t.electionTimeout {
		r.startGuard = false
	}
	if r.heldPreVote != nil && !r.inLease() {
		r.answerHeldPreVote() // the dead leader's lease ran out (ranked.go)
	}
	if r.promotable() && r.t.electionElapsed >= r.t.randomizedTimeout {
		if r.rec.mayCampaign() {
			if r.liveLeaderWaits() {
				return // its heartbeats may be late only (live_leader.go)
			}
			r.noteCampaign()
			r.t.electionElapsed = 0
			r.hup(false)
		} else if (r.t.electionElapsed-r.t.randomizedTimeout)%r.t.electionTimeout == 0 {
			// Its pre-vote would have woken a quiet leader. The timer runs
			// on: reset, it would keep inLease true and refuse the votes a
			// member recovering with a floor owes the others.
			r.hello()
		}
	}
}

func (r *raft) hup(transfer bool) {
	if r.role == Leader || !r.rec.mayCampaign() {
		return
	}
	r.unrank() // it took its turn (ranked.go)
	r.campaign(r.preVote && !transfer, transfer)
}

// inLease reports whether this node heard from a live leader recently
// enough to ignore vote requests (check-quorum's leader lease), or started
// less than an election timeout ago and may have (startGuard).
func (r *raft) inLease() bool {
	return r.checkQuorum && (r.lead != None || r.startGuard) && r.t.electionElapsed < r.t.electionTimeout
}

// step handles one message from a peer.
func (r *raft) step(m Message) {
	if tell := r.wakeOn(m); tell != None {
		defer r.tellLeader(tell)
	}
	switch {
	case m.Term > r.term:
		if (m.Type == MsgVote || m.Type == MsgPreVote) && !m.Transfer && r.inLease() {
			r.holdPreVote(m)
			return
		}
		switch {
		case m.Type == MsgPreVote:
			// A pre-vote never changes our term.
		case m.Type == MsgPreVoteResp && !m.Reject:
			// Granted pre-votes carry the term we would campaign at.
		case m.Type == MsgApp || m.Type == MsgHeartbeat || m.Type == MsgSnap:
			r.becomeFollower(m.Term, m.From)
		default:
			r.becomeFollower(m.Term, None)
		}
	case m.Term < r.term:
		r.stepStale(m)
		return
	}
	switch m.Type {
	case MsgPreVote, MsgVote:
		r.handleVoteRequest(m)
		return
	}
	switch r.role {
	case Leader:
		r.stepLeader(m)
	case Candidate, PreCandidate:
		r.stepCandidate(m)
	default:
		r.stepFollower(m)
	}
}

// stepStale answers messages from an older term where that helps the
// sender catch up: a deposed leader learns our term from the response, and
// a pre-candidate learns why it cannot win.
func (r *raft) stepStale(m Message) {
	switch {
	case (r.checkQuorum || r.preVote) && (m.Type == MsgApp || m.Type == MsgHeartbeat):
		r.send(Message{Type: MsgAppResp, To: m.From})
	case m.Type == MsgPreVote:
		r.send(Message{Type: MsgPreVoteResp, To: m.From, Term: r.term, Reject: true})
	}
}
