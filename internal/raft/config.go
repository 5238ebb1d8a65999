package raft

import (
	"errors"
	"math/rand/v2"
	"time"
)

// Config configures a Node. Start from DefaultConfig: the zero value of the
// bool fields means "off".
type Config struct {
	// ID is this node's id (non-zero).
	ID ID
	// Peers is the initial membership, used only when Storage holds no
	// membership (a fresh group). A node joining an existing group starts
	// with no peers and learns the membership from the leader.
	Peers []ID
	// LeadsFirstTerm makes a founding member of a fresh group (Peers
	// given, storage empty) its leader in term 1, the bootstrap's term,
	// without an election: every election is for term 2 or later, so
	// nobody else can lead term 1. Give it to at most one member of a
	// group, and only to a member that has never run it (a member that
	// lost its storage must not lead term 1 a second time). Ignored
	// otherwise.
	LeadsFirstTerm bool
	// ElectionTicks is the election timeout in ticks. Followers campaign
	// after a random timeout in [ElectionTicks, 2*ElectionTicks).
	ElectionTicks int
	// HeartbeatTicks is the leader's heartbeat interval in ticks.
	HeartbeatTicks int
	// MaxInflight bounds the append messages in flight to one follower.
	MaxInflight int
	// MaxInflightBytes bounds the entry bytes of the appends in flight to
	// one follower (a follower catching up gets full batches, and
	// MaxInflight of them would all sit in its memory at once).
	MaxInflightBytes int
	// MaxBatchBytes bounds the entries carried by one append message.
	MaxBatchBytes int
	// MaxApplyBytes bounds the committed entries handed out per Ready.
	MaxApplyBytes int
	// MaxUncommittedBytes bounds the leader's proposed-but-unapplied
	// entries; past it Propose returns ErrProposalDropped. 0 = no bound.
	MaxUncommittedBytes int
	// PreVote runs a pre-election round so that a partitioned node does
	// not disrupt the group by raising terms when it rejoins.
	PreVote bool
	// CheckQuorum makes a leader step down when it has not heard from a
	// quorum within an election timeout, and makes followers that heard
	// from a leader within that time ignore vote requests.
	CheckQuorum bool
	// Recovering marks a member that lost state it may have acknowledged
	// (a damaged or wiped log, snapshot or store, discarded at start). It
	// does not campaign until it caught up. With RecoveringFloor, the
	// position of the last entry of the discarded log (its term and vote
	// kept), it votes only for candidates at least as up to date as that
	// entry, and is done once its log reaches it. Without one it grants no
	// vote until it holds everything the leader had committed when it
	// first heard from one, and afterwards only for terms above that
	// leader's (recover.go).
	Recovering      bool
	RecoveringFloor LogPosition
	// Applied is the last index already applied by a durable state
	// machine at startup (0: replay everything after the snapshot).
	Applied uint64
	// Rand returns a random int in [0, n). It jitters election timeouts;
	// inject a seeded source for deterministic simulation. Default: a PCG
	// seeded with ID.
	Rand func(n int) int
	// Seed names the group, the same on every member (the server hashes
	// the group's name): it orders the live voters that take turns to
	// campaign once the server of the group's leader died (ranked.go), a
	// different order in each group. Groups that share servers should
	// differ in it; 0 is a seed like any other.
	Seed uint64
	// Quiesce lets an idle group stop ticking and heartbeating (see
	// quiesce.go): the embedding server then tells the node of changes
	// of its peers' health (Node.LivenessChanged).
	Quiesce bool
	// DeferCommit lets a leader hold back the commit index it would send
	// alone (an empty append, once a commit moved and no entry is left to
	// send): the next append carries it, or the next tick, or FlushCommit,
	// whichever comes first (see CommitOwed). A synchronous writer's next
	// entry then tells the followers, instead of one more message each way
	// per entry and a pass of every group on the way.
	DeferCommit bool
	// PeerHealth tells whether a peer's server is live and knows
	// quiescence; nil means every peer is live and does.
	PeerHealth func(id ID) PeerHealth
	// LiveLeaderWait is how many ticks past its election timeout a
	// follower waits before campaigning while PeerHealth says its
	// leader's server is live (live_leader.go); 0: it does not wait.
	LiveLeaderWait int
	// OnCampaign, if set, is told why a follower campaigns as its
	// election timeout ran out, and which leader it knew (None if none):
	// counts for monitoring (campaign_reason.go). Called on the node's
	// goroutine; it must not block.
	OnCampaign func(reason CampaignReason, lead ID)
	// OnCheckQuorum, if set, is told when a leader's check-quorum found
	// no quorum heard from within an election timeout, and what it did
	// (check_quorum.go). Called on the node's goroutine; it must not
	// block.
	OnCheckQuorum func(CheckQuorumOutcome)
	// Lease lets a leader answer reads at once, without a heartbeat round,
	// for Lease after sending a heartbeat round that a quorum acknowledged
	// (lease.go). 0: every read waits for a round. It needs CheckQuorum and
	// Now, and must be shorter than the real time ElectionTicks ticks can
	// take at the fastest, less a margin for clock rates: that is the
	// driver's guarantee (server/raft.go states the server's).
	Lease time.Duration
	// Now reads the monotonic clock that measures the lease.
	Now func() time.Time
}

// Defaults used by DefaultConfig and for zero numeric fields.
const (
	DefaultElectionTicks    = 10
	DefaultHeartbeatTicks   = 1
	DefaultMaxInflight      = 256
	DefaultMaxInflightBytes = 32 << 20
	DefaultMaxBatchBytes    = 1 << 20
	DefaultMaxApplyBytes    = 4 << 20
)

// DefaultConfig returns a Config with pre-vote and check-quorum on and the
// default timeouts and limits.
func DefaultConfig(id ID, peers []ID) Config {
	return Config{
		ID:               id,
		Peers:            peers,
		ElectionTicks:    DefaultElectionTicks,
		HeartbeatTicks:   DefaultHeartbeatTicks,
		MaxInflight:      DefaultMaxInflight,
		MaxInflightBytes: DefaultMaxInflightBytes,
		MaxBatchBytes:    DefaultMaxBatchBytes,
		MaxApplyBytes:    DefaultMaxApplyBytes,
		PreVote:          true,
		CheckQuorum:      true,
	}
}

func (c *Config) validate() error {
	if c.ID == None {
		return errors.New("raft: config: ID must not be zero")
	}
	if c.ElectionTicks == 0 {
		c.ElectionTicks = DefaultElectionTicks
	}
	if c.HeartbeatTicks == 0 {
		c.HeartbeatTicks = DefaultHeartbeatTicks
	}
	if c.HeartbeatTicks < 0 || c.ElectionTicks <= c.HeartbeatTicks {
		return errors.New("raft: config: ElectionTicks must exceed HeartbeatTicks > 0")
	}
	if c.MaxInflight <= 0 {
		c.MaxInflight = DefaultMaxInflight
	}
	if c.MaxBatchBytes <= 0 {
		c.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if c.MaxInflightBytes <= 0 {
		c.MaxInflightBytes = DefaultMaxInflightBytes
	}
	if c.MaxApplyBytes <= 0 {
		c.MaxApplyBytes = DefaultMaxApplyBytes
	}
	if c.MaxUncommittedBytes < 0 {
		return errors.New("raft: config: MaxUncommittedBytes must not be negative")
	}
	if c.Lease < 0 || c.Lease > 0 && (c.Now == nil || !c.CheckQuorum) {
		return errors.New("raft: config: a Lease needs Now and CheckQuorum")
	}
	if c.Rand == nil {
		r := rand.New(rand.NewPCG(uint64(c.ID), 0x7465726e))
		c.Rand = r.IntN
	}
	return nil
}
