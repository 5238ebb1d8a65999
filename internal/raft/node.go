package raft

import (
	"fmt"
	"slices"
)

// Node is one member of a raft group, driven from outside (like etcd-io/raft's
// RawNode). It is not safe for concurrent use: one goroutine (the driver)
// calls Tick, Step, Propose and friends, and between Ready and Advance it
// calls nothing else.
type Node struct {
	r        *raft
	prevSoft SoftState
	prevHard HardState
}

// NewNode starts a node from its storage. A fresh group takes its members
// from cfg.Peers; a restarted node recovers its term, vote, commit index,
// log and membership from st.
func NewNode(cfg Config, st Storage) (*Node, error) {
	r, err := newRaft(cfg, st)
	if err != nil {
		return nil, err
	}
	// Compare against what is stored, so that a bootstrap (or a commit index
	// raised by the snapshot) is written out in the first Ready.
	stored, _, err := st.InitialState()
	if err != nil {
		return nil, err
	}
	return &Node{r: r, prevSoft: r.softState(), prevHard: stored}, nil
}

// Tick advances the logical clock by one tick.
func (n *Node) Tick() { n.r.tick() }

// Step hands the node a message from a peer.
func (n *Node) Step(m Message) error {
	if m.Type == 0 || m.Type > lastMsgType {
		return fmt.Errorf("raft: unknown message type %d", m.Type)
	}
	if m.From == None || m.From == n.r.id {
		return fmt.Errorf("raft: message %s has sender %d", m.Type, m.From)
	}
	if m.To != n.r.id {
		return fmt.Errorf("raft: message %s for %d reached %d", m.Type, m.To, n.r.id)
	}
	n.r.step(m)
	return nil
}

// Campaign starts an election now (a pre-election first if PreVote is on).
func (n *Node) Campaign() {
	n.r.unquiet()
	n.r.hup(false)
}

// CampaignFirst starts the first election of a group nobody has led yet
// (a fresh bootstrap: term 1, no leader heard of): at once and without the
// pre-election round, which keeps a node that was cut off from disrupting
// a leader, and a new group has none. On a node with any other history it
// is Campaign.
func (n *Node) CampaignFirst() {
	r := n.r
	r.unquiet()
	if r.role == Leader || !r.rec.mayCampaign() {
		return
	}
	r.campaign(r.preVote && !(r.term == 1 && r.lead == None), false)
}

// Propose appends data to the log. Only the leader accepts proposals
// (ErrNotLeader otherwise). Proposals made between two Ready calls are sent
// to followers together.
func (n *Node) Propose(data []byte) error {
	n.r.wakeLeader()
	return n.r.propose(EntryNormal, data)
}

// ProposeConfChange proposes adding or removing one member. See ConfChange
// for when the change takes effect.
func (n *Node) ProposeConfChange(cc ConfChange) error {
	n.r.wakeLeader()
	return n.r.proposeConfChange(cc)
}

// TransferLeadership asks the leader to hand leadership to peer to: once to
// has the whole log it is told to campaign at once. Proposals are refused
// meanwhile; the transfer is abandoned after an election timeout.
func (n *Node) TransferLeadership(to ID) error {
	n.r.wakeLeader()
	return n.r.transferLeadership(to)
}

// ReadIndex asks for a linearizable read; ctx identifies the request (the
// caller picks it, unique among its pending reads). The answer comes as a
// ReadState with the same ctx in a later Ready: the read may be served once
// the state machine has applied its Index. On the leader, the commit index
// is recorded and confirmed by a heartbeat round that a quorum
// acknowledges (all requests made between two Readys share one round); a
// leader that has not yet committed an entry of its term holds requests
// until it has. A follower forwards the request to its leader. Requests
// are never refused once queued, but may go unanswered: a leader that
// steps down drops them, and forwarded ones can be lost, so callers time
// out and retry. ErrProposalDropped means no leader is known (or too many
// reads are pending): retry later.
func (n *Node) ReadIndex(ctx []byte) error {
	n.r.wakeLeader()
	return n.r.readIndex(n.r.id, ctx)
}

// LeaseRead answers a linearizable read at once when this node leads
// under a lease that holds now (Config.Lease, lease.go) and has committed
// an entry of its term: the read may be served once the state machine has
// applied index. Otherwise ok is false and the caller uses ReadIndex. It
// reads the clock when called, so ask it when the read is to be served,
// not earlier.
func (n *Node) LeaseRead() (index uint64, ok bool) { return n.r.leaseRead() }

// Quiescent reports whether the node is quiet: its ticks do nothing, so
// the driver need not tick it until something wakes it (a message, a
// call, LivenessChanged).
func (n *Node) Quiescent() bool { return n.r.quiet }

// LivenessChanged tells the node that the health of some peers' servers
// (Config.PeerHealth) changed. A quiet follower whose leader's server is
// down wakes and elects; a quiet leader wakes when a peer came back or
// when its live members no longer make a quorum. A leader gives up a
// transfer to a member whose server is down at once.
func (n *Node) LivenessChanged() { n.r.livenessChanged() }

// LeaderStopped tells the node that lead stopped leading in term, as its
// server said (a leader whose group halted resigns, and its server, still
// up, looks alive to node liveness). A quiet follower of it wakes, so its
// election clock runs: with no heartbeat from that leader it campaigns
// after an election timeout, as an awake follower would. The leader is
// not forgotten, so no lease it may hold is cut short (lease.go). An awake
// follower of it no longer waits for its live server (Config.LiveLeaderWait)
// if it stopped in the term it led; if it stopped in a later term, a
// candidate (a transfer's target) displaced it, and the wait holds.
func (n *Node) LeaderStopped(lead ID, term uint64) { n.r.leaderStopped(lead, term) }

// Resign ends this node's leadership in its term, if it leads: it tells a
// member that holds its whole log to campaign at once and follows nobody
// until a leader of a later term is heard (its server found the group
// wedged and told the others it stopped: server/raft_wedge.go).
func (n *Node) Resign() { n.r.resign() }

// SoftState returns the current volatile state.
func (n *Node) SoftState() SoftState { return n.r.softState() }

// HasReady reports whether Ready has anything to hand out.
func (n *Node) HasReady() bool {
	r := n.r
	r.flush()
	return r.softState() != n.prevSoft || r.hardState() != n.prevHard ||
		r.log.u.snap != nil || len(r.log.u.unhanded()) > 0 || len(r.msgs) > 0 ||
		r.log.hasNextCommitted() || len(r.readStates) > 0
}

// Ready returns the pending work. The caller must process it and call
// Advance before calling anything else on the node.
func (n *Node) Ready() Ready {
	r := n.r
	r.flush()
	rd := Ready{
		SoftState:        r.softState(),
		Entries:          slices.Clip(r.log.u.unhanded()),
		Messages:         r.msgs,
		CommittedEntries: r.log.nextCommitted(),
		ReadStates:       r.readStates,
	}
	if hs := r.hardState(); hs != n.prevHard {
		rd.HardState = &hs
		rd.MustSync = hs.Term != n.prevHard.Term || hs.Vote != n.prevHard.Vote
		rd.voteChanged = rd.MustSync
		n.prevHard = hs
	}
	if s := r.log.u.snap; s != nil {
		snap := *s
		rd.Snapshot = &snap
	}
	rd.MustSync = rd.MustSync || len(rd.Entries) > 0 || rd.Snapshot != nil
	r.log.u.handAll()
	r.msgs, r.readStates = nil, nil
	n.prevSoft = rd.SoftState
	return rd
}

// Advance tells the node that rd was processed: its entries and snapshot
// are stable and its committed entries applied. (A Ready whose entries
// sync behind, Driver.SyncBehind, leaves them in progress: Persisted
// reports them.)
func (n *Node) Advance(rd Ready) {
	l := n.r.log
	if s := rd.Snapshot; s != nil {
		if l.u.snap != nil && l.u.snap.Index == s.Index {
			l.u.snap = nil
		}
		l.applied = max(l.applied, s.Index)
	}
	if k := len(rd.Entries); k > 0 && !rd.behind {
		e := rd.Entries[k-1]
		n.r.persisted(e.Index, e.Term)
	}
	if k := len(rd.CommittedEntries); k > 0 {
		l.appliedTo(rd.CommittedEntries[k-1].Index)
		if ls := n.r.ls; ls != nil {
			for i := range rd.CommittedEntries {
				if e := &rd.CommittedEntries[i]; e.Type == EntryNormal {
					ls.uncommitted -= min(ls.uncommitted, e.size())
				}
			}
		}
	}
}

// Persisted tells the node that its log is durable up to entry (index,
// term), handed out in an earlier Ready whose sync ran behind. A leader
// counts itself toward a commit only for entries so reported. A report
// for entries replaced since (a truncated tail) does nothing.
func (n *Node) Persisted(index, term uint64) { n.r.persisted(index, term) }

// Compact prepares a snapshot of the state machine at index (which must be
// applied) with the given state. The driver persists the returned snapshot
// and drops the log entries it covers (see LogStore.Compact); the leader
// then sends it to followers that fall behind it.
func (n *Node) Compact(index uint64, data []byte) (Snapshot, error) {
	r := n.r
	if r.log.u.snap != nil {
		return Snapshot{}, ErrSnapshotTemporarilyUnavailable
	}
	if index > r.log.applied {
		return Snapshot{}, fmt.Errorf("raft: compact at %d beyond applied %d", index, r.log.applied)
	}
	if index < r.log.firstIndex() {
		return Snapshot{}, ErrSnapOutOfDate
	}
	term, err := r.log.term(index)
	if err != nil {
		return Snapshot{}, err
	}
	peers := slices.Clone(r.conf.at(index))
	r.conf.compact(index)
	return Snapshot{Index: index, Term: term, Peers: peers, Data: data}, nil
}

// PeerStatus is the leader's view of one member.
type PeerStatus struct {
	Match, Next  uint64
	State        string // "probe", "replicate" or "snapshot"
	RecentActive bool
	// Live: the peer's server is reachable as Config.PeerHealth says (a
	// leader learns of a member's death there before its ticks show it).
	Live      bool
	IdleTicks int // ticks since the leader last heard from the peer
	Inflight  int
	Paused    bool
}

// Status describes a node for monitoring ("current", "lag", "active").
type Status struct {
	ID ID
	SoftState
	Vote        ID
	Commit      uint64
	Applied     uint64
	FirstIndex  uint64
	LastIndex   uint64
	Peers       []ID
	Transferee  ID
	Progress    map[ID]PeerStatus // leader only
	PendingConf bool              // a membership change is not committed yet
}

// Indexes returns the commit and applied indexes, without building a Status.
func (n *Node) Indexes() (commit, applied uint64) { return n.r.log.committed, n.r.log.applied }

// Status returns a snapshot of the node's state.
func (n *Node) Status() Status {
	r := n.r
	s := Status{
		ID:          r.id,
		SoftState:   r.softState(),
		Vote:        r.vote,
		Commit:      r.log.committed,
		Applied:     r.log.applied,
		FirstIndex:  r.log.firstIndex(),
		LastIndex:   r.log.lastIndex(),
		Peers:       slices.Clone(r.conf.current()),
		PendingConf: r.conf.lastIndex() > r.log.committed,
	}
	if r.role == Leader {
		s.Transferee = r.ls.transferee
		s.Progress = make(map[ID]PeerStatus, len(r.ls.prs))
		for id, pr := range r.ls.prs {
			s.Progress[id] = PeerStatus{Match: pr.match, Next: pr.next, State: pr.state.String(),
				RecentActive: pr.recentActive, Live: id == r.id || r.health(id).Live, IdleTicks: pr.idleTicks,
				Inflight: pr.inflights.count, Paused: pr.paused()}
		}
	}
	return s
}

// CommitOwed reports whether the leader holds back a commit index its
// followers have not heard of (Config.DeferCommit): the driver calls
// FlushCommit soon, unless an event sends it first.
func (n *Node) CommitOwed() bool {
	r := n.r
	return r.role == Leader && r.ls.commitOwed
}

// FlushCommit sends the commit index held back, if any, with the next
// Ready.
func (n *Node) FlushCommit() { n.r.flushCommit() }
