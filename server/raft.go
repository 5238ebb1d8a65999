package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/nats-io/nats-server/v2/internal/lattrace"
	"github.com/nats-io/nats-server/v2/internal/lockorder"
	"hash/fnv"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/internal/clock"
	"github.com/nats-io/nats-server/v2/internal/raft"
)

// Raft groups run here: one goroutine per group owns its raft.Driver and
// feeds it ticks, peer messages and proposals; the Driver persists →
// syncs → sends → applies → advances in one place. Messages travel over
// routes as RAFT operations.

// raftTick is the group clock; elections take 10-20 ticks, leaders send
// heartbeats every raftHeartbeatTicks (5 to 10 per election timeout).
var raftTick = 50 * time.Millisecond

const raftHeartbeatTicks = 2

// raftLeaseTicks is the leader lease in ticks (internal/raft/lease.go): a
// leader answers reads at once for 300 ms after sending a heartbeat round
// that a quorum acknowledged, measured on its monotonic clock.
//
// Why no new leader can be elected meanwhile: a follower that took the
// round's heartbeat at time t (after it was sent) grants no vote and does
// not campaign until its group counted the election timeout, 10 ticks,
// since t. Ticks come from one clock goroutine per server (raft_clock.go):
// its ticker fires at most once per raftTick on the follower's monotonic
// clock, one fire may wait in the ticker's channel from before t, and a
// busy group may take one broadcast from before t late; a group that
// misses broadcasts counts fewer ticks, a stopped process none. So 10
// ticks span at least 7 × raftTick = 350 ms after t. The 50 ms (14%) left
// covers two machines' clock rates, which differ by far less. A restarted
// follower counts its guard from its start (startGuard), the same way.
const raftLeaseTicks = 6

// raftID maps a server name to the peer id it has in every group. Server
// names are stable across restarts (server ids are not).
func raftID(serverName string) raft.ID {
	h := fnv.New64a()
	h.Write([]byte(serverName))
	if v := h.Sum64(); v != 0 {
		return raft.ID(v)
	}
	return 1
}

// groupSM is what a group applies to.
type groupSM interface {
	raft.StateMachine
	// leaderChanged is called (on the group goroutine) when the soft state
	// changes; ready means the node leads and has applied its whole log.
	leaderChanged(st raft.SoftState)
}

// proposal is one entry to propose; done (if set) gets the outcome of the
// proposal call (not of the apply).
type proposal struct {
	data []byte
	done proposalDone // nil: nobody waits
}

// proposalDone is told whether a proposal entered the log (err nil) or
// was refused. A stream is one itself, so that proposing a publish
// allocates no callback.
type proposalDone interface {
	proposed(data []byte, err error)
}

// doneFunc makes a function a proposalDone.
type doneFunc func(error)

func (f doneFunc) proposed(_ []byte, err error) { f(err) }

type raftGroup struct {
	name  string
	srv   *Server
	drv   *raft.Driver
	log   raft.LogStore
	sm    groupSM
	inbox *raftQueue[raft.Message]
	props *raftQueue[proposal]
	reads *raftQueue[groupRead] // linearizable reads waiting (raft_read.go)
	ctrl  chan func(*raft.Node)
	halts chan groupHalt // a halt asked from outside the group (raft_halt.go)
	wake  chan struct{}  // the node liveness view changed (raft_live.go)
	quit  chan struct{}
	done  chan struct{}

	stopOnce  sync.Once // stop may be called from several goroutines
	closeOnce sync.Once

	host     bool        // driven by a raftHost (raft_host.go), fixed at start
	sleeping atomic.Bool // asleep: quiescent, no ticks (raft_live.go; read by monitoring and tests)
	// leads is whether the node led when its last Ready was taken: it
	// drops as soon as a Ready shows the demotion, before that Ready is
	// persisted and before the state machine hears of it (leaderChanged).
	leads        atomic.Bool
	passes       atomic.Uint64 // events handled but liveness nudges (tests: a quiet group has none)
	snapshotting bool          // a snapshot is being encoded (group goroutine only)
	eager        int           // ticks left in which a new group's first leader retries its campaign
	// spooled are snapshots stepped whose data is in spool files: once
	// the Readys that follow are processed, the log has its own copy (or
	// raft ignored them) and the files go (group goroutine only).
	spooled []raft.Snapshot

	rd groupReads // reads asked and waiting (group goroutine only)

	owedTimer clock.Timer // sends a commit index held back (run; group goroutine only)

	// The leader's log sync running behind (raft_behind.go): synced is
	// nudged when one ends, syncs counts those running (stop waits for
	// them before closing the log), lazy is a hosted group's.
	synced chan struct{}
	syncs  sync.WaitGroup
	lazy   *raft.LazySync

	// seen is the soft state of the last Ready (group goroutine only);
	// leaderChanged hears of it once that Ready is processed.
	seen raft.SoftState

	// beat counts the starts and ends of the loop's passes (odd: inside
	// one); wd is what the raft clock's wedge scan knows of it
	// (raft_wedge.go; the clock's goroutine only).
	beat atomic.Uint64
	wd   wedgeWatch
	// deposed is the last term whose leadership the server deposed while
	// the group was wedged (raft_wedge.go); written under mu.
	deposed atomic.Uint64

	mu lockorder.Mutex[lockorder.RaftGroup]
	// soft is what the state machine was last told (tell), last the soft
	// state the group last observed; telling: a goroutine tells it now.
	soft    raft.SoftState
	last    raft.SoftState
	telling bool
	status  raft.Status // the last one asked for (statusSnapshot)
	failure error
}

// raftGroups is the server's registry of groups.
type raftGroups struct {
	mu     lockorder.Mutex[lockorder.RaftGroups]
	groups map[string]*raftGroup
	closed bool // shutting down: no new groups
	// sending holds "<route id> <group>" for each snapshot going out in
	// pieces (raft_frag.go).
	sending sync.Map
	// spooledIn counts snapshots received into spool files (raft_spool.go),
	// spooledOut those sent from a file they were left in, restoredFromLog
	// the stream snapshots restored as a stream from a raft log's snapshot
	// file left on disk.
	spooledIn, spooledOut, restoredFromLog atomic.Uint64
	// early holds messages for groups not started yet (raft_early.go);
	// notRunning counts the messages that came for such groups.
	early      earlyMail
	notRunning atomic.Uint64
	msgs       raftMsgCounts      // raft_msgcount.go
	elections  raftElectionCounts // raft_campaigns.go
	// inPass counts the groups whose goroutine is inside a pass of its
	// loop (raft_wedge.go enter/leave): the wedge scan walks the groups
	// only when some are.
	inPass atomic.Int64
}

var errGroupStopped = errors.New("raft group stopped")

// raftLiveLeaderWait is how many ticks more than its election timeout a
// follower waits before campaigning while its leader's server is live
// (internal/raft live_leader.go): two election timeouts, so it campaigns
// 1.5-2 s after the last heartbeat it took instead of 0.5-1 s. A busy
// machine left heartbeats unread that long, and its followers stormed.
var raftLiveLeaderWait = 2 * raft.DefaultElectionTicks

// startRaftGroup creates and runs a group with the given initial peers.
func (s *Server) startRaftGroup(name string, peers []raft.ID, log raft.LogStore, sm groupSM) (*raftGroup, error) {
	cfg := raft.DefaultConfig(raftID(s.name), peers)
	cfg.HeartbeatTicks = raftHeartbeatTicks
	if rs, ok := sm.(recoveringSM); ok {
		cfg.Recovering, cfg.RecoveringFloor = rs.recovering(), rs.recoveringFloor()
	}
	cfg.Quiesce, cfg.PeerHealth = s.raftQuiesces(), s.raftPeerHealth
	cfg.LiveLeaderWait = raftLiveLeaderWait
	cfg.OnCampaign = s.noteCampaign
	cfg.OnCheckQuorum = s.noteCheckQuorum
	// A stream group sends a commit index no append carries within
	// raftCommitDelay (run), or at the next tick. The meta group sends it
	// at once: every server applies a create before its replica starts
	// (2 ms more per create), and a meta entry that halts the leader's
	// apply must still reach the followers, which halt on it too.
	_, meta := sm.(*metaSM)
	cfg.DeferCommit = !meta
	cfg.Lease, cfg.Now = raftLeaseTicks*raftTick, s.clock.Now
	salt := raftJitterSalt
	if s.getOpts().raftHost != nil {
		salt = 0
	}
	cfg.Rand, cfg.Seed = raftJitter(name, cfg.ID, salt), raftSeed(name)
	if fc, ok := sm.(firstCampaigner); ok && fc.campaignsFirst() {
		cfg.LeadsFirstTerm = true // no election: see campaignFirst
	}
	g := &raftGroup{name: name, srv: s, sm: sm, log: log, inbox: newRaftQueue[raft.Message](raftInboxMax),
		props: newRaftQueue[proposal](raftProposalMax), reads: newRaftQueue[groupRead](raftReadMax), ctrl: make(chan func(*raft.Node), 16),
		halts: make(chan groupHalt, 1), wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}),
		synced: make(chan struct{}, 1)}
	var tr raft.Transport = &raftTransport{s: s, group: name}
	host := s.getOpts().raftHost
	g.host = host != nil
	if host != nil {
		tr = host.transport(s, name)
		cfg.PeerHealth = func(id raft.ID) raft.PeerHealth { return host.peerHealth(s, id) }
		if wl, ok := log.(*walLog); ok {
			wl.inline = true
		}
	}
	drv, err := raft.NewDriver(cfg, log, tr, sm)
	if err != nil {
		return nil, err
	}
	drv.Observe = func(rd *raft.Ready) {
		g.seen = rd.SoftState
		g.leads.Store(rd.SoftState.Role == raft.Leader)
	}
	if host == nil {
		drv.SyncAside = syncAside
		drv.SyncBehind = g.syncBehind
	} else {
		drv.SyncBehind = g.hostedSyncBehind
	}
	drv.Reads = g.readStates
	g.seen = drv.Node.SoftState()
	g.leads.Store(g.seen.Role == raft.Leader)
	g.drv = drv
	if err := s.registerRaftGroup(g); err != nil {
		return nil, err
	}
	// The state machine holds its group before the group runs: a new
	// stream's first leader may take a publish before startReplica
	// returns, and a publish its stream refused as "group still starting"
	// (10008) came right after a create had been answered.
	if b, ok := sm.(groupBinder); ok {
		b.bindGroup(g)
	}
	if host != nil {
		host.hostGroup(s, g)
		if g.campaignsFirst() {
			g.control(g.campaignFirst)
		}
		return g, nil
	}
	go g.run() // counted by registerRaftGroup
	return g, nil
}

// groupBinder is a state machine that holds its group (a stream's
// replica): startRaftGroup hands the group over before it runs.
type groupBinder interface {
	bindGroup(g *raftGroup)
}

// registerRaftGroup registers g and, for a group the server runs itself,
// hands it the messages kept for it and counts its goroutine, all under
// the registry lock, so a group is either stopped by stopRaftGroups or
// never runs (a group counted here is started right after).
func (s *Server) registerRaftGroup(g *raftGroup) error {
	s.raft.mu.Lock()
	defer s.raft.mu.Unlock()
	switch {
	case s.raft.closed:
		return errGroupStopped
	case s.raft.groups[g.name] != nil:
		return fmt.Errorf("raft group %q is already running", g.name)
	}
	if s.raft.groups == nil {
		s.raft.groups = map[string]*raftGroup{}
	}
	s.raft.groups[g.name] = g
	if g.host {
		return nil
	}
	for _, m := range s.raft.early.take(g.name) {
		g.inbox.push(m)
	}
	s.startRaftClock()
	s.wg.Add(1)
	return nil
}

// syncAside runs a leader's log sync on a goroutine of its own while the
// group's goroutine applies the entries committed before (raft.Driver):
// clients hear of a commit without waiting for the next batch's fsync.
func syncAside(sync, apply func() error) (syncErr, applyErr error) {
	done := make(chan error, 1)
	lattrace.Mark("syncAside", 0)
	go func() { done <- recoveredSync(sync) }()
	applyErr = apply()
	return <-done, applyErr
}

func (s *Server) raftGroup(name string) *raftGroup {
	s.raft.mu.Lock()
	defer s.raft.mu.Unlock()
	return s.raft.groups[name]
}

// raftGroupNamed is raftGroup for a name in a message (no copy is made).
func (s *Server) raftGroupNamed(name []byte) *raftGroup {
	s.raft.mu.Lock()
	defer s.raft.mu.Unlock()
	return s.raft.groups[string(name)]
}

func (g *raftGroup) run() {
	defer g.srv.wg.Done()
	defer close(g.done)
	defer g.removeSpooled()
	defer func() {
		if g.owedTimer != nil {
			g.owedTimer.Stop()
		}
	}()
	defer g.failOnPanic()
	tick := g.srv.raftClock.next()
	// What the group starts with is written (and a new group's directory
	// synced) at once, not at the first event: a new member answers its
	// first leader's vote request sooner.
	if g.campaignsFirst() {
		g.campaignFirst(g.drv.Node)
	}
	if err := g.settle(); err != nil {
		g.fail(err)
		return
	}
	var owed <-chan time.Time // armed while the node holds back a commit index
	for {
		var err error
		nudged := false
		select {
		case <-owed:
			g.enter()
			owed = nil
			g.drv.Node.FlushCommit()
		case <-tick:
			g.enter()
			// A group busy for longer than a tick skips the ticks it
			// missed, as a time.Ticker would.
			tick = g.srv.raftClock.next()
			err = g.stepBeforeTick()
			if err == nil {
				err = g.onTick(g.srv.clock.Now())
			}
		case <-g.wake:
			g.enter()
			nudged = true
			g.onLiveness()
		case <-g.synced:
			g.enter()
			err = g.drv.Reap(false)
		case <-g.inbox.ready:
			g.enter()
			lattrace.Mark("g.inbox", 0)
			err = g.step()
		case <-g.props.ready:
			g.enter()
			lattrace.Mark("g.props", 0)
			g.propose()
		case <-g.reads.ready:
			g.enter()
			g.startReads()
		case f := <-g.ctrl:
			g.enter()
			f(g.drv.Node)
		case h := <-g.halts:
			g.haltAsked(h) // raft_halt.go
			return
		case <-g.quit:
			return
		}
		if !nudged {
			g.passes.Add(1)
		}
		if err == nil {
			err = g.settle()
		}
		if err == nil && g.resignIfDeposed() {
			err = g.settle()
		}
		if err != nil {
			g.leave()
			g.fail(err)
			return
		}
		if owed == nil && g.drv.Node.CommitOwed() {
			owed = g.commitTimer()
		}
		tick, err = g.maybeSleep(tick)
		g.leave() // the pass ends here: falling asleep syncs the log (raft_wedge.go)
		if err != nil {
			g.fail(err)
			return
		}
	}
}

// maybeSleep puts a quiescent group to sleep (no ticks until something
// wakes it; it syncs its log and releases its files, which a stalled disk
// may block: still inside the pass, for the wedge scan) or keeps it
// awake; it returns the tick to wait for. A leadership deposed while it
// synced is resigned at once, and the group stays awake.
func (g *raftGroup) maybeSleep(tick <-chan struct{}) (<-chan struct{}, error) {
	if g.asleep() {
		if !g.resignIfDeposed() {
			if tick != nil {
				g.releaseFiles() // it just fell asleep
			}
			g.inbox.release() // an idle group keeps no slots
			g.props.release()
			g.reads.release()
			g.sleeping.Store(true)
			return nil, nil
		}
		if err := g.settle(); err != nil {
			return tick, err
		}
	}
	if tick == nil {
		tick = g.srv.raftClock.next()
		g.sleeping.Store(false)
	}
	return tick, nil
}

// raftCommitDelay is how long a leader holds back a commit index that
// no append carries (raft.Config.DeferCommit): a synchronous writer's
// next entry, sent well within it, tells the followers instead. Each
// entry then costs one append and one answer per follower, not two: the
// separate commit message and its answer, and the pass of each group they
// took, came right when that next entry arrived (scripts/lattrace;
// nats-server tells its followers with the next append or heartbeat too).
// Followers apply that much later when the leader goes idle; a read
// through a follower is unaffected (a heartbeat round carries the commit
// index, and a read index answered from the lease sends it along). A hosted group (the simulator) sends it at the next tick.
const raftCommitDelay = 2 * time.Millisecond

// commitTimer arms the group's commit timer (group goroutine only).
func (g *raftGroup) commitTimer() <-chan time.Time {
	if g.owedTimer == nil {
		g.owedTimer = g.srv.clock.NewTimer(raftCommitDelay)
	} else {
		g.owedTimer.Reset(raftCommitDelay)
	}
	return g.owedTimer.C()
}

// The group's work, one event at a time: run calls these on the group's
// goroutine; a raftHost (the simulator) calls them on its own, in the
// order it chooses. After each event, settle.

// onTick advances the group's clock by one tick.
func (g *raftGroup) onTick(now time.Time) error {
	if err := g.reapOnTick(); err != nil {
		return err
	}
	if err := g.drv.Tick(); err != nil {
		return err
	}
	g.campaignAgain(g.drv.Node)
	g.readTick()
	g.inbox.trim()
	g.props.more() // a backstop while the group ticks: held proposals are woken at their read's end (propose_held.go)
	g.props.trim()
	g.reads.trim()
	if ps, ok := g.log.(interface{ periodicSync(time.Time) error }); ok {
		return ps.periodicSync(now)
	}
	return nil
}

// settle processes every Ready the last event made, then the duties that
// follow: reads, spool files, snapshots, leader changes.
func (g *raftGroup) settle() error {
	if err := g.drv.ProcessAll(); err != nil {
		return err
	}
	if g.serveReads() { // asked again: the Ready carries the request
		if err := g.drv.ProcessAll(); err != nil {
			return err
		}
	}
	g.removeSpooled()
	g.maybeSnapshot()
	g.observe()
	return nil
}

// step feeds up to 257 queued messages (the rest wait for the next pass,
// after the Readys these made are processed). Ordinary rejections (stale
// terms, unknown peers) are dropped; a broken invariant in the core halts
// the group.
func (g *raftGroup) step() error {
	defer g.inbox.more()
	for range 257 {
		m, ok := g.inbox.pop()
		if !ok {
			return nil
		}
		if m.Snapshot != nil {
			if _, ok := m.Snapshot.Local.(spooledSnap); ok {
				g.spooled = append(g.spooled, *m.Snapshot)
			}
		}
		if err := g.drv.Step(m); err != nil && isRaftHalt(err) {
			return err
		}
	}
	return nil
}

// stepBeforeTick steps the messages that arrived before the tick did:
// with both ready, select picks either, and a follower whose last election
// tick came first campaigned with its leader's heartbeat waiting in its
// inbox (a saturated machine runs the group late, and then both are).
func (g *raftGroup) stepBeforeTick() error {
	if g.inbox.size() == 0 {
		return nil
	}
	return g.step()
}

// removeSpooled deletes the spool files of the snapshots stepped so far.
func (g *raftGroup) removeSpooled() {
	for _, snap := range g.spooled {
		g.srv.removeSpooled(snap)
	}
	clear(g.spooled)
	g.spooled = g.spooled[:0]
}

// propose proposes up to 1,025 queued proposals, so one append (and one
// fsync) carries a batch.
func (g *raftGroup) propose() {
	defer g.props.more()
	for range 1025 {
		p, ok := g.props.pop()
		if !ok {
			return
		}
		err := g.drv.Node.Propose(p.data)
		if p.done != nil {
			p.done.proposed(p.data, err)
		}
	}
}

// snapPayload is what a state machine's snapshot encoder hands the raft
// log: the full form's bytes, or a local kind kept instead (a stream's
// linkedSnap: raft.Snapshot.Local, never encoded).
type snapPayload struct {
	data  []byte
	local any
}

// snapshotSkipper is implemented by state machines some of whose snapshot
// failures are expected (the state changed or closed meanwhile): those
// are logged at debug level, not as warnings.
type snapshotSkipper interface {
	skippedSnapshot(err error) bool
}

// snapshotter is implemented by state machines that compact their log.
// wantSnapshot fixes the state at index on the group goroutine; encode
// then serialises it on another goroutine while the group goes on.
type snapshotter interface {
	wantSnapshot() (index uint64, encode func() (snapPayload, error), ok bool)
}

// maybeSnapshot starts a snapshot once the state machine asks for one: the
// state is encoded on a goroutine of its own, and the log is compacted
// back on the group goroutine. One snapshot is encoded at a time.
func (g *raftGroup) maybeSnapshot() {
	sn, ok := g.sm.(snapshotter)
	if !ok || g.snapshotting {
		return
	}
	index, encode, due := sn.wantSnapshot()
	if !due {
		return
	}
	if g.hosted() {
		g.snapshotNow(index, encode)
		return
	}
	g.snapshotting = true
	g.srv.wg.Add(1)
	go func() {
		defer g.srv.wg.Done()
		t0 := g.srv.clock.Now()
		p, err := encode()
		took := g.srv.clock.Since(t0)
		g.control(func(*raft.Node) {
			g.snapshotting = false
			g.compact(index, p, err, took)
		})
	}()
}

// compact truncates the log to a snapshot encoded at index.
func (g *raftGroup) compact(index uint64, p snapPayload, err error, took time.Duration) {
	if err == nil {
		err = g.drv.CompactLocal(index, p.data, p.local)
	}
	switch {
	case err == nil:
		g.srv.Debugf("RAFT group %q: snapshot at %d, %d bytes, encoded in %v", g.name, index, len(p.data), took)
	case err == raft.ErrSnapshotTemporarilyUnavailable, err == raft.ErrSnapOutOfDate, g.skipped(err):
		g.srv.Debugf("RAFT group %q: snapshot at %d not taken: %v", g.name, index, err)
	default:
		g.srv.Warnf("RAFT group %q: snapshot at %d failed: %v", g.name, index, err)
	}
}

// skipped reports whether the state machine expected a snapshot failure.
func (g *raftGroup) skipped(err error) bool {
	sk, ok := g.sm.(snapshotSkipper)
	return ok && sk.skippedSnapshot(err)
}

// observe tells the state machine of a new soft state once the Ready that
// carried it is processed (so a leader is ready only once it applied).
func (g *raftGroup) observe() {
	g.mu.Lock()
	g.last = g.seen
	g.mu.Unlock()
	g.tell(true)
	if rs, ok := g.sm.(recoveringSM); ok && rs.recovering() && !g.drv.Node.Recovering() {
		commit, _ := g.drv.Node.Indexes()
		rs.recovered(commit)
	}
	if o, ok := g.sm.(progressObserver); ok {
		commit, applied := g.drv.Node.Indexes()
		o.observed(g.seen.Lead, commit, applied)
	}
}

// tell brings the state machine to the soft state it should know
// (wantLocked), calling leaderChanged once per change. One goroutine tells
// at a time: another that finds it telling leaves its change to it, which
// looks again before it stops. The group's goroutine tells everything
// (onGroup); the wedge's deposal (raft_wedge.go) tells only that the
// group stopped leading, and hands a leadership to tell over to the
// group's goroutine, on which a state machine starts serving.
func (g *raftGroup) tell(onGroup bool) {
	g.mu.Lock()
	if g.telling {
		g.mu.Unlock()
		return
	}
	g.telling = true
	handOver := false
	for {
		want := g.wantLocked()
		if want == g.soft {
			break
		}
		if !onGroup && want.Role == raft.Leader {
			handOver = true
			break
		}
		g.soft = want
		g.mu.Unlock()
		g.sm.leaderChanged(want)
		g.mu.Lock()
	}
	g.telling = false
	g.mu.Unlock()
	if handOver {
		g.control(func(*raft.Node) { g.tell(true) })
	}
}

// wantLocked is the soft state the state machine should know: the one
// the group last observed, but that of a follower in the term it was told
// of when the group failed, or when it still leads in a term whose
// leadership its server deposed (raft_wedge.go).
func (g *raftGroup) wantLocked() raft.SoftState {
	st := g.last
	if g.failure == nil && (st.Role != raft.Leader || st.Term > g.deposed.Load()) {
		return st
	}
	if g.soft.Role != raft.Leader {
		return g.soft
	}
	return raft.SoftState{Role: raft.Follower, Term: g.soft.Term}
}

// recoveringSM is implemented by state machines whose replica may have
// lost state it acknowledged (a stream's, stream_repair.go): the group
// starts as a recovering member (raft.Config.Recovering) and is told once
// it caught up with a leader.
type recoveringSM interface {
	recovering() bool
	// recoveringFloor is raft.Config.RecoveringFloor for the group.
	recoveringFloor() raft.LogPosition
	// recovered is called (on the group goroutine) once the node caught
	// up, with its commit index then.
	recovered(commit uint64)
}

// progressObserver is implemented by state machines that follow their
// group's progress (on the group goroutine, after every pass): the leader
// known and the commit and applied indexes, read without building a Status.
type progressObserver interface {
	observed(lead raft.ID, commit, applied uint64)
}

// fail stops the group and marks it unhealthy; the process keeps running.
func (g *raftGroup) fail(err error) {
	g.srv.Errorf("RAFT group %q halted: %v", g.name, err)
	g.failQuiet(err)
}

// failQuiet is fail without its log line (the caller logged its own).
func (g *raftGroup) failQuiet(err error) {
	g.mu.Lock()
	g.failure = err
	if g.soft.Role != raft.Leader {
		// A halted follower knows no leader: a server whose meta group
		// halted must not take a leader for known (metaLeaderKnown) and
		// leave a client's request to it unanswered. Its state machine is
		// not told (as before the wedge's tell).
		g.soft = raft.SoftState{Role: raft.Follower, Term: g.soft.Term}
	}
	g.mu.Unlock()
	g.tell(true) // a leader stops serving and resigns
	if h, ok := g.sm.(haltObserver); ok && !g.host {
		h.halted() // a stream's replica is restarted (stream_halt_restart.go)
	}
}

// haltObserver is implemented by state machines told that their group
// halted (raftGroup.fail), on the group goroutine.
type haltObserver interface {
	halted()
}

// Propose queues data for the group; it fails at once when the queue is full.
func (g *raftGroup) Propose(data []byte, done proposalDone) {
	if g.proposeQuiet(data, done) {
		g.props.signal()
	}
}

// proposeQuiet queues data like Propose but does not wake the group, and
// reports whether it queued it: the caller then owes the group a wake
// (g.props.signal) once its batch is queued (propose_held.go).
func (g *raftGroup) proposeQuiet(data []byte, done proposalDone) bool {
	var err error
	select {
	case <-g.done:
		err = errGroupStopped
	default:
		if g.props.pushQuiet(proposal{data: data, done: done}) {
			lattrace.Mark("raft.queued", len(data))
			return true
		}
		err = raft.ErrProposalDropped
	}
	if done != nil {
		done.proposed(data, err)
	}
	return false
}

// firstCampaigner is implemented by state machines whose replica may be
// a new group's first leader (a stream's, chosen by its assignment).
type firstCampaigner interface {
	campaignsFirst() bool
}

// campaignsFirst reports whether the group starts by campaigning.
func (g *raftGroup) campaignsFirst() bool {
	fc, ok := g.sm.(firstCampaigner)
	return ok && fc.campaignsFirst()
}

// campaignFirst makes this member campaign at once instead of after an
// election timeout: a new group needs a leader now, and nobody has led it
// yet. A group whose state machine campaigns first is started with
// raft.Config.LeadsFirstTerm, so on a fresh log it already leads term 1
// and this does nothing; it campaigns only if the core declined that. The group's goroutine does it before it writes its initial state,
// so one fsync covers both (a hosted group: its host runs it). A peer
// that started the group late missed the first round if the message
// kept for it expired (raft_early.go): a pre-vote is retried every other
// tick until a leader is known.
func (g *raftGroup) campaignFirst(n *raft.Node) {
	g.eager = 10
	n.CampaignFirst()
}

// campaignAgain retries an early campaign (group goroutine, on a tick).
func (g *raftGroup) campaignAgain(n *raft.Node) {
	if g.eager == 0 {
		return
	}
	g.eager--
	// A vote under way (Candidate) is left to finish: campaigning again
	// would spend another term. A pre-vote round is cheap to restart.
	if st := n.SoftState(); st.Lead != raft.None {
		g.eager = 0
	} else if g.eager%2 == 0 && st.Role != raft.Candidate {
		n.Campaign()
	}
}

// control runs f on the group goroutine (leader transfer, compaction).
func (g *raftGroup) control(f func(*raft.Node)) {
	select {
	case g.ctrl <- f:
	case <-g.done:
	}
}

// tryControl runs f on the group goroutine unless its control queue is
// full (the group is busy); periodic duties use it so they never wait.
func (g *raftGroup) tryControl(f func(*raft.Node)) {
	select {
	case g.ctrl <- f:
	default:
	}
}

func (g *raftGroup) softState() raft.SoftState {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.soft
}

// statusSnapshot returns the node's status (with the leader's view of
// every peer), made on the group goroutine when asked: monitoring and
// membership decisions ask for it, the group loop does not poll it. A
// stopped or unresponsive group answers with the last status made.
func (g *raftGroup) statusSnapshot() raft.Status {
	if g.hosted() { // called on the host's goroutine, which drives the group
		st := g.drv.Node.Status()
		g.mu.Lock()
		g.status = st
		g.mu.Unlock()
		return st
	}
	ch := make(chan raft.Status, 1)
	asked := func(n *raft.Node) { ch <- n.Status() }
	wait := g.srv.clock.NewTimer(statusWait)
	defer wait.Stop()
	select {
	case g.ctrl <- asked:
		select {
		case st := <-ch:
			g.mu.Lock()
			g.status = st
			g.mu.Unlock()
			return st
		case <-g.done:
		case <-wait.C():
		}
	case <-g.done:
	case <-wait.C():
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.status
}

// statusWait bounds how long statusSnapshot waits for a busy group (an
// API request answered on a route's read loop waits with it).
const statusWait = 500 * time.Millisecond

func (g *raftGroup) healthy() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.failure
}

func (g *raftGroup) stop() {
	g.stopOnce.Do(func() {
		close(g.quit)
		if g.hosted() { // no goroutine to close done
			g.removeSpooled()
			close(g.done)
		}
	})
	<-g.done
	g.syncs.Wait() // a sync behind ends before its log closes
	g.closeOnce.Do(func() {
		if c, ok := g.log.(io.Closer); ok {
			if err := c.Close(); err != nil {
				g.srv.Warnf("RAFT group %q: closing its log: %v", g.name, err)
			}
		}
	})
	g.srv.raft.mu.Lock()
	if g.srv.raft.groups[g.name] == g {
		delete(g.srv.raft.groups, g.name)
	}
	g.srv.raft.mu.Unlock()
}

// raftTransport sends a group's messages over routes.
type raftTransport struct {
	s     *Server
	group string
	buf   []byte // used only by the group goroutine
}

func (t *raftTransport) Send(msgs []raft.Message) {
	for i := range msgs {
		r := t.s.routeForPeer(msgs[i].To)
		if r == nil {
			continue // raft retries
		}
		if r.remote.Proto < routeProtoGroupNames && t.s.sharedOldName([]byte(t.group)) {
			continue // the peer would take it for another stream's (jetstream_group_name.go)
		}
		if msgs[i].Type == raft.MsgSnap && t.s.expandSnapshot(r, t.group, &msgs[i]) {
			continue
		}
		if msgs[i].Type != raft.MsgSnap && t.s.batchesRaftTo(r) && t.sendBatched(r, &msgs[i]) {
			continue // in the route's RAFTB frame (raft_batch.go)
		}
		// "RAFT <size>\r\n" then the payload: the group name and the
		// message. The line is built in one buffer reused by this group's
		// goroutine (the route copies it into its output).
		need := len(t.group) + encodedRaftMsgSize(&msgs[i]) + 48
		if cap(t.buf) < need {
			t.buf = make([]byte, 0, need)
		}
		full := t.buf[:cap(t.buf)]
		payload := appendRaftPayload(full[32:32], t.group, &msgs[i])
		if len(payload) > raftFragSize && t.s.sendRaftFrags(r, t.group, msgs[i].Type == raft.MsgSnap, payload) {
			t.buf = nil
			continue
		}
		var hdr [32]byte
		h := appendUint(append(hdr[:0], "RAFT "...), uint64(len(payload)))
		h = append(h, "\r\n"...)
		start := 32 - len(h)
		copy(full[start:32], h)
		line := append(full[start:32+len(payload)], "\r\n"...)
		r.c.queueProto(line)
		t.s.raft.msgs.noteFrameSent(frameRAFT)
		r.raftOut.frames.Add(1)
		r.raftOut.records.Add(1)
		t.s.raft.msgs.noteSent(msgs[i].Type)
		lattrace.Mark("send", int(msgs[i].Type)*1000+len(msgs[i].Entries))
		if cap(t.buf) > 256<<10 {
			t.buf = nil // do not keep a snapshot-sized buffer
		}
	}
}

// appendRaftPayload appends what a RAFT frame carries: the group's name
// and the encoded message.
func appendRaftPayload(b []byte, group string, m *raft.Message) []byte {
	b = binary.AppendUvarint(b, uint64(len(group)))
	b = append(b, group...)
	return encodeRaftMsg(b, m)
}

func appendUint(b []byte, v uint64) []byte {
	var tmp [20]byte
	i := len(tmp)
	for {
		i--
		tmp[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return append(b, tmp[i:]...)
}

// deliverRaft hands a RAFT payload from a route to its group; owned says
// the message may keep payload's memory (else it is copied).
func (s *Server) deliverRaft(payload []byte, owned bool) error {
	n, k := binary.Uvarint(payload)
	if k <= 0 || uint64(len(payload)-k) < n {
		return errBadRaftMsg
	}
	name := payload[k : k+int(n)]
	decode := decodeRaftMsg
	if owned {
		decode = decodeOwnedRaftMsg
	}
	m, err := decode(payload[k+int(n):])
	if err != nil {
		return err
	}
	s.deliverRaftMsg(name, m, len(payload))
	return nil
}

// deliverRaftMsg hands a decoded message for group name (size bytes on
// the wire) to its group, or keeps it a moment for a group not started.
func (s *Server) deliverRaftMsg(name []byte, m raft.Message, size int) {
	if m.Quiesce && !s.raftQuiesces() {
		m.Quiesce = false // a test's stand-in for an older server ignores the mark
	}
	g := s.raftGroupOrKeep(name, m, size)
	if g == nil {
		return // not (yet) a member here: kept a moment if small
	}
	lattrace.Mark("raft.recv", int(m.Type)*1000+len(m.Entries))
	s.raft.msgs.noteRecv(m.Type)
	g.inbox.push(m) // full: dropped, raft retries
}

// stopRaftGroups stops every group (shutdown).
func (s *Server) stopRaftGroups() {
	s.raft.mu.Lock()
	s.raft.closed = true
	groups := make([]*raftGroup, 0, len(s.raft.groups))
	for _, g := range s.raft.groups {
		groups = append(groups, g)
	}
	s.raft.mu.Unlock()
	for _, g := range groups {
		g.stop()
	}
}

// isRaftHalt tells a halted core (a recovered panic: a broken invariant)
// from a message the core refused.
func isRaftHalt(err error) bool {
	return strings.HasPrefix(err.Error(), "raft: group halted")
}
