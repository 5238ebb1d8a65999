package raft

import (
	"errors"
	"fmt"
)

// ID identifies a peer of a raft group. Zero means "nobody".
type ID uint64

// None is the zero ID: no leader, no vote.
const None ID = 0

// EntryType tells what an entry carries.
type EntryType uint8

const (
	// EntryNormal carries application data proposed with Propose.
	EntryNormal EntryType = iota
	// EntryNoOp is appended by every new leader; committing it commits the
	// whole log before it (Raft §5.4.2, §8).
	EntryNoOp
	// EntryConfChange carries an encoded ConfChange (one peer added or removed).
	EntryConfChange
)

func (t EntryType) String() string {
	switch t {
	case EntryNormal:
		return "Normal"
	case EntryNoOp:
		return "NoOp"
	case EntryConfChange:
		return "ConfChange"
	}
	return fmt.Sprintf("EntryType(%d)", uint8(t))
}

// Entry is one record of the replicated log.
type Entry struct {
	Term  uint64
	Index uint64
	Type  EntryType
	Data  []byte
}

// entryOverhead approximates the fixed cost of an entry (term, index, type,
// framing) when batches are limited by bytes.
const entryOverhead = 24

func (e *Entry) size() uint64 { return uint64(len(e.Data)) + entryOverhead }

// MessageType is the kind of a raft message.
type MessageType uint8

const (
	// MsgPreVote asks whether the sender could win an election at Term
	// (the sender's term plus one) without anyone changing term.
	MsgPreVote MessageType = iota + 1
	// MsgPreVoteResp answers a MsgPreVote.
	MsgPreVoteResp
	// MsgVote requests a vote for Term. Index/LogTerm describe the
	// candidate's last entry.
	MsgVote
	// MsgVoteResp answers a MsgVote.
	MsgVoteResp
	// MsgApp carries Entries following (Index, LogTerm), and the leader's Commit.
	MsgApp
	// MsgAppResp acknowledges a MsgApp or MsgSnap: Index is the last index
	// known to match; on Reject, Index is the rejected Index and
	// RejectHint/LogTerm help the leader skip back quickly.
	MsgAppResp
	// MsgHeartbeat keeps followers from campaigning and carries a commit
	// index no greater than what the follower is known to hold. Index is
	// the leader's read round (see ReadIndex).
	MsgHeartbeat
	// MsgHeartbeatResp answers a MsgHeartbeat, echoing its Index.
	MsgHeartbeatResp
	// MsgSnap carries a snapshot to a follower whose next entry the leader
	// no longer has. It is answered with MsgAppResp.
	MsgSnap
	// MsgTimeoutNow tells a follower to campaign at once (leader transfer).
	MsgTimeoutNow
	// MsgReadIndex forwards a follower's read request (Node.ReadIndex) to
	// the leader; its one entry's Data is the request's context.
	MsgReadIndex
	// MsgReadIndexResp answers a MsgReadIndex once the leader confirmed it
	// leads: Index is the read index, the one entry's Data the context.
	MsgReadIndexResp
)

// lastMsgType is the highest MessageType a node accepts.
const lastMsgType = MsgReadIndexResp

var msgNames = [...]string{"", "PreVote", "PreVoteResp", "Vote", "VoteResp", "App", "AppResp",
	"Heartbeat", "HeartbeatResp", "Snap", "TimeoutNow", "ReadIndex", "ReadIndexResp"}

func (t MessageType) String() string {
	if int(t) < len(msgNames) && t != 0 {
		return msgNames[t]
	}
	return fmt.Sprintf("MessageType(%d)", uint8(t))
}

// Message is what peers exchange. Field meanings depend on Type (see the
// MessageType constants).
type Message struct {
	Type       MessageType
	From, To   ID
	Term       uint64
	LogTerm    uint64
	Index      uint64
	Commit     uint64
	Entries    []Entry
	Reject     bool
	RejectHint uint64
	Snapshot   *Snapshot
	// Transfer marks vote requests caused by a leader transfer: receivers
	// grant them even while they still follow a live leader.
	Transfer bool
	// Quiesce marks a leader's last heartbeat before its group goes quiet
	// (quiesce.go).
	Quiesce bool
}

func (m Message) String() string {
	s := fmt.Sprintf("%s %d->%d t%d i%d lt%d c%d", m.Type, m.From, m.To, m.Term, m.Index, m.LogTerm, m.Commit)
	if len(m.Entries) > 0 {
		s += fmt.Sprintf(" ents[%d..%d]", m.Entries[0].Index, m.Entries[len(m.Entries)-1].Index)
	}
	if m.Reject {
		s += fmt.Sprintf(" reject(hint %d)", m.RejectHint)
	}
	if m.Quiesce {
		s += " quiesce"
	}
	if m.Snapshot != nil {
		s += fmt.Sprintf(" snap(%d,%d)", m.Snapshot.Index, m.Snapshot.Term)
	}
	return s
}

// Snapshot is the state machine's state at Index, with the membership in
// force at that index.
type Snapshot struct {
	Index uint64
	Term  uint64
	Peers []ID
	Data  []byte
	// Local, when set, is where the embedding server holds the data
	// instead of Data (a file on its own disk). The core carries it
	// untouched; it is never encoded, so a snapshot received from a peer
	// has none.
	Local any
}

// IsEmpty reports whether s is the zero snapshot.
func (s *Snapshot) IsEmpty() bool { return s.Index == 0 }

// HardState is what must survive a crash besides the log.
type HardState struct {
	Term   uint64
	Vote   ID
	Commit uint64
}

// IsEmpty reports whether h is the zero hard state.
func (h HardState) IsEmpty() bool { return h == HardState{} }

// Role is a node's role in its group.
type Role uint8

const (
	Follower Role = iota
	PreCandidate
	Candidate
	Leader
)

func (r Role) String() string {
	switch r {
	case Follower:
		return "Follower"
	case PreCandidate:
		return "PreCandidate"
	case Candidate:
		return "Candidate"
	case Leader:
		return "Leader"
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}

// SoftState is volatile state the upper layer wants to know about. It need
// not be persisted.
type SoftState struct {
	Lead ID
	Role Role
	Term uint64
	// LeaderReady is true on a leader once the NoOp entry of its term is
	// committed and applied, i.e. once the state machine reflects the whole
	// log. The upper layer must not serve as leader before that.
	LeaderReady bool
}

// Ready is a batch of work for the driver. Process it in this order:
// persist Snapshot, Entries and HardState; sync if MustSync; restore the
// state machine from Snapshot if any; send Messages; apply
// CommittedEntries; call Advance.
type Ready struct {
	SoftState        SoftState
	HardState        *HardState // nil when unchanged
	Entries          []Entry    // to append to stable storage
	Snapshot         *Snapshot  // to persist and install, nil if none
	Messages         []Message  // to send once the above is durable
	CommittedEntries []Entry    // to apply, in order
	// ReadStates answer Node.ReadIndex requests: serve each read once the
	// state machine has applied its Index.
	ReadStates []ReadState
	// MustSync is true when the batch contains entries, a snapshot, or a
	// changed term or vote: those must be durable before Messages leave
	// (but see LeaderMayPipeline).
	MustSync bool
	// voteChanged is true when HardState changes the term or the vote.
	voteChanged bool
	// behind is set by the driver when Entries sync behind (Advance
	// leaves them in progress; Node.Persisted reports them).
	behind bool
}

// LeaderMayPipeline reports whether rd's Messages may leave before its
// entries are durable: they are a leader's appends, heartbeats, snapshots
// and answers to followers' read indexes (an index committed already),
// and the batch changes neither term nor vote (nor installs a snapshot).
// A leader writes its own log in parallel with replicating it
// (Raft thesis, 10.2.1): it counts itself toward a commit only for
// entries persisted (Advance after the sync, or Node.Persisted), and a
// follower answers an append only once it made the entries durable
// itself, so a committed entry is durable on a quorum.
func (rd *Ready) LeaderMayPipeline() bool {
	return len(rd.Messages) > 0 && rd.leaderOnly()
}

// leaderOnly reports whether rd is a leader's that changes neither term
// nor vote, installs no snapshot, and whose messages promise nothing
// about its own log's durability (see LeaderMayPipeline).
func (rd *Ready) leaderOnly() bool {
	if rd.SoftState.Role != Leader || rd.voteChanged || rd.Snapshot != nil {
		return false
	}
	for i := range rd.Messages {
		switch rd.Messages[i].Type {
		case MsgApp, MsgHeartbeat, MsgSnap:
		case MsgReadIndexResp: // names an index committed (durable on a quorum) already
		default:
			return false
		}
	}
	return true
}

var (
	// ErrNotLeader is returned by calls that only a leader can serve.
	ErrNotLeader = errors.New("raft: not the leader")
	// ErrProposalDropped is returned while a leader transfer is in progress
	// or when the leader's uncommitted backlog is full.
	ErrProposalDropped = errors.New("raft: proposal dropped")
	// ErrConfChangePending is returned when a membership change is proposed
	// while another one is uncommitted, or before the leader has committed
	// an entry of its own term.
	ErrConfChangePending = errors.New("raft: a membership change is pending")
	// ErrInvalidConfChange is returned for adding a member, removing a
	// non-member, or removing the last member.
	ErrInvalidConfChange = errors.New("raft: invalid membership change")
	// ErrUnknownPeer is returned for a leader transfer to a non-member.
	ErrUnknownPeer = errors.New("raft: unknown peer")
	// ErrCompacted is returned by Storage for indexes folded into a snapshot.
	ErrCompacted = errors.New("raft: requested index is compacted")
	// ErrUnavailable is returned by Storage for indexes past the log's end.
	ErrUnavailable = errors.New("raft: requested entry is unavailable")
	// ErrSnapOutOfDate is returned when installing or taking a snapshot older
	// than the one already held.
	ErrSnapOutOfDate = errors.New("raft: snapshot is out of date")
	// ErrSnapshotTemporarilyUnavailable may be returned by Storage.Snapshot;
	// the leader then retries later.
	ErrSnapshotTemporarilyUnavailable = errors.New("raft: snapshot temporarily unavailable")
)
