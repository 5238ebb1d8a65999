package server

import (
	"encoding/json"
	"fmt"
	"github.com/nats-io/nats-server/v2/internal/lattrace"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// A replicated stream is a stream whose every state change goes through
// its raft group: the leader only validates what is stateless, stamps a
// timestamp and proposes; every replica applies committed entries in log
// order through processJetStreamMsg and friends. The server that proposed
// an entry answers the client once it has applied it.

// streamSM adapts a replica to raft.StateMachine.
type streamSM struct {
	mset    *stream
	scratch streamEntry // the entry being applied (Apply runs on one goroutine)
	// repairing: the replica discarded damaged state and catches up before
	// it votes (stream_repair.go); only the group goroutine changes it.
	repairing bool
	floor     raft.LogPosition // its raft.Config.RecoveringFloor
	// wake gathers the clients an Apply call answered (deliverBatch); each
	// is woken once, at the end of the call or every applyWakeEvery entries.
	wake map[*client]struct{}
	// current: the replica has applied everything committed that a leader
	// told it of since it started (group goroutine only).
	current bool
	// restarted: the replica was started from what this server held
	// (startRestored, startReplayed); its becoming current is counted
	// (jetstream_restart_progress.go).
	restarted bool
	// first: this replica is a new stream's first leader; its group
	// campaigns as it starts (raftGroup.campaignFirst).
	first bool
}

func (sm *streamSM) campaignsFirst() bool { return sm.first }

// observed serves direct gets once the replica is current: a leader is
// known and everything committed that the replica knows of is applied. A
// replica that is starting would answer from an empty or old store, so it
// waits, as nats-server's followers wait until they are current.
func (sm *streamSM) observed(lead raft.ID, commit, applied uint64) {
	if sm.current || lead == raft.None || applied < commit {
		return
	}
	sm.current = true
	if sm.restarted {
		if jc := sm.mset.jsa.js.cluster; jc != nil {
			jc.restart.replicaCurrent(jc.js.srv)
		}
	}
	sm.mset.mu.Lock()
	direct := sm.mset.cfg.AllowDirect && !sm.mset.closed
	sm.mset.mu.Unlock()
	if direct {
		sm.mset.subscribeDirect()
	}
}

// applyWakeEvery bounds how many entries' answers wait for a wake-up, so
// that a large batch does not hold its first answers back for long.
const applyWakeEvery = 256

// stopped uncounts a replica started from what this server held that
// stops or halts before it became current (jetstream_restart_progress.go),
// once. Called on the group goroutine as it halts, or once its group
// stopped (no goroutine runs it any more).
func (sm *streamSM) stopped() {
	if !sm.restarted || sm.current {
		return
	}
	sm.restarted = false
	if jc := sm.mset.jsa.js.cluster; jc != nil {
		jc.restart.replicaStopped(jc.js.srv)
	}
}

func (sm *streamSM) Apply(ents []raft.Entry) error {
	if sm.wake == nil {
		sm.wake = map[*client]struct{}{}
	}
	lattrace.Mark("apply", len(ents))
	if lattrace.On {
		defer lattrace.Mark("apply.done", len(ents))
	}
	defer wakeAll(sm.wake)
	for i := range ents {
		if i%applyWakeEvery == applyWakeEvery-1 {
			wakeAll(sm.wake)
		}
		e := &ents[i]
		sm.mset.mu.Lock()
		stale := e.Index <= sm.mset.lastIndex // already in the installed snapshot
		if !stale {
			sm.mset.lastIndex = e.Index
		}
		sm.mset.mu.Unlock()
		if stale {
			continue
		}
		if e.Type == raft.EntryNoOp {
			sm.mset.termStarted() // consumer_cluster_pin.go
		}
		if e.Type != raft.EntryNormal || len(e.Data) == 0 {
			continue
		}
		se := &sm.scratch
		if err := decodeStreamEntryAt(se, e.Data, sm.mset.jsa.js.srv.Name()); err != nil {
			return err
		}
		sm.mset.applyEntry(se, e.Index, sm.wake)
		se.m.hdr, se.m.msg = nil, nil // views of the entry: not kept past it
		// A store broken by a panic or a write error
		// (stream_store_panic.go, stream_store_failure.go) halts the
		// group; the replica restarts from its log.
		if err := sm.mset.storeFailure(); err != nil {
			return fmt.Errorf("stream store failed: %w", err)
		}
	}
	return nil
}

// Restore installs a snapshot: the exact state at its index.
func (sm *streamSM) Restore(snap raft.Snapshot) error {
	if snap.IsEmpty() {
		return nil
	}
	if err := sm.mset.restoreSnapshot(snap); err != nil {
		return err
	}
	sm.mset.mu.Lock()
	var st StreamState
	sm.mset.st().FastState(&st)
	sm.mset.lastIndex, sm.mset.snapIndex, sm.mset.snapEvery = snap.Index, snap.Index, 2*st.Msgs
	if fs, ok := sm.mset.st().(linkableStore); ok && linkedSnapshots {
		sm.mset.snapEvery = linkedSnapshotEvery(2 * fs.NumBlocks())
	}
	sm.mset.installs++
	if sm.mset.group != nil { // not the local snapshot restored at start
		sm.mset.received++
	}
	sm.mset.mu.Unlock()
	return nil
}

func (sm *streamSM) expandSnapshot(local any) (vfs.File, int64, error) {
	l, ok := local.(linkedSnap)
	if !ok {
		return nil, 0, fmt.Errorf("no linked snapshot to expand: %T", local)
	}
	return sm.mset.expandSnapshot(l)
}

func (sm *streamSM) wantSnapshot() (uint64, func() (snapPayload, error), bool) {
	return sm.mset.wantSnapshot()
}

func (sm *streamSM) leaderChanged(st raft.SoftState) { sm.mset.leaderChanged(st) }

// testHookReplicaStarted, set only by tests, runs as startReplica returns
// (to stretch the moment after its group started).
var testHookReplicaStarted func(s *Server, sa *streamAssignment)

// testHookMetaAnswer, set only by tests, runs as the origin of a meta
// call starts answering it (jetstream_cluster.go apply).
var testHookMetaAnswer func(s *Server, me *metaEntry)

// testHookReplicaStarting, set only by tests, runs as startReplica begins
// (to start a replica late, as a server restarting thousands does).
var testHookReplicaStarting func(s *Server, sa *streamAssignment)

// bindGroup makes g the replica's group before g runs (startRaftGroup):
// its first leader may take a publish before startReplica returns, and
// propose refuses a publish with no group.
func (sm *streamSM) bindGroup(g *raftGroup) {
	mset := sm.mset
	o := mset.jsa.js.srv.getOpts()
	mset.mu.Lock()
	defer mset.mu.Unlock()
	mset.group = g
	if mset.cfg.Storage == FileStorage && o.raftHost == nil && mset.syncer == nil { // a host syncs stores itself
		// The raft log makes entries durable; the store still syncs every
		// sync_interval, which checkpoints it, compacts blocks and removes
		// the files of dropped ones.
		mset.syncer = newGroupCommit(mset, false, o.backgroundSync())
	}
}

// skippedSnapshot: a snapshot abandoned because the stream changed under
// it, or not taken because the stream stopped, is expected.
func (sm *streamSM) skippedSnapshot(err error) bool {
	return err == errSnapshotAbandoned || err == ErrStoreClosed
}

// replicaStart says where the assignment a replica starts from was
// learned, which decides the members its group starts with (when its log
// holds none) and whether it may lead the group's first term.
type replicaStart int

const (
	// startCreated: a stream's creation, applied as it happens. The
	// replica founds the group with the assignment's peers, and the
	// stream's first leader leads term 1 without an election.
	startCreated replicaStart = iota
	// startReplayed: a creation applied again (replayed from the meta log
	// at start, or while catching it up): the replica may have run the
	// group before, so it founds it but never leads term 1.
	startReplayed
	// startRestored: an assignment from a meta snapshot, whose peers may
	// have changed since the group was founded. A replica with a log
	// resumes with the membership it holds; one without joins and learns
	// it from the leader, but for the only replica of a group of one,
	// which has no leader to learn from and founds the group again.
	startRestored
	// startJoin: a replica added to an existing group joins: it starts
	// with no known members and learns log and membership from the leader.
	startJoin
)

// foundingPeers is the members the replica's group starts with when its
// log holds none (nil: it joins).
func (how replicaStart) foundingPeers(sa *streamAssignment) []raft.ID {
	if how == startJoin || how == startRestored && len(sa.Peers) > 1 {
		return nil
	}
	var peers []raft.ID
	for _, p := range sa.Peers {
		peers = append(peers, raftID(p))
	}
	return peers
}

// startReplica creates the local replica of an assigned stream and its
// raft group (how: where the assignment was learned). The store is rebuilt
// from the group's log, so it starts empty.
func (jsa *jsAccount) startReplica(sa *streamAssignment, how replicaStart) (*stream, error) {
	if testHookReplicaStarting != nil {
		testHookReplicaStarting(jsa.js.srv, sa)
	}
	cfg := sa.Config
	// The name is claimed while the store opens, without jsa.mu: a server
	// restarting with thousands of streams opens several at once, and
	// lookups (API requests, publishes) go on meanwhile.
	var old *stream
	done, _ := jsa.claim(cfg.Name, nil, func() *ApiError {
		if old = jsa.streams[cfg.Name]; old != nil {
			return errStreamNameExist()
		}
		return nil
	})
	if old != nil {
		return old, nil
	}
	dir := filepath.Join(jsa.dir, cfg.Name)
	// The store is rebuilt from the group's log at every start: what the
	// directory holds is set aside and deleted in the background
	// (stream_discard.go). It need not survive a power loss, so its
	// directories are made without fsyncs, by its first write (a replica
	// created costs no directory, nor file, until it has a message).
	jsa.js.emptyStoreDir(dir)
	store, err := jsa.openReplicaStore(dir, &cfg)
	var mset *stream
	if err == nil {
		mset = &stream{jsa: jsa, name: cfg.Name, quoted: strconv.Quote(cfg.Name), cfg: cfg, created: sa.Created, ddmap: map[string]*dedupeEntry{}, replicated: true}
		mset.setStore(store)
	}
	jsa.mu.Lock()
	if mset != nil {
		jsa.streams[cfg.Name] = mset
	}
	jsa.unclaimLocked(cfg.Name, done)
	jsa.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if cfg.FirstSeq > 1 {
		_ = store.SkipMsgs(cfg.FirstSeq - 1)
	}
	s := jsa.js.srv
	// A directory an older server left under an ambiguous name
	// (jetstream_group_name.go), before anything looks at the directory.
	if err := jsa.js.claimGroupDir(sa, how); err != nil {
		jsa.dropReplica(mset)
		return nil, err
	}
	lost := jsa.js.groupLost(sa, how) // before checkIncarnation makes the directory
	owed, fresh, err := jsa.js.checkIncarnation(sa)
	if err != nil {
		jsa.dropReplica(mset)
		return nil, err
	}
	o := s.getOpts()
	syncEvery := o.SyncInterval // an opt-out: fsynced every interval
	if o.syncEachWrite() {
		syncEvery = 0 // each batch fsynced before it is answered or applied
	}
	_, err = jsa.startStreamGroup(sa, mset, how, lost, syncEvery, owed, fresh) // stream_repair.go; binds the group (streamSM.bindGroup)
	if err != nil {
		jsa.dropReplica(mset)
		return nil, err
	}
	if testHookReplicaStarted != nil {
		testHookReplicaStarted(s, sa)
	}
	// Every replica serves direct gets (queue group _sys_), as nats-server,
	// once it is current (streamSM.observed).
	return mset, nil
}

// removeGroupDir removes a stream's group directory and its log mark
// (raft_logmark.go) for good.
func (js *jetStream) removeGroupDir(sa *streamAssignment) {
	dir := js.groupDir(sa)
	vfs.RemoveAllSynced(js.fs, dir)
	removeLogMark(js.fs, dir)
}

func (jsa *jsAccount) dropReplica(mset *stream) {
	jsa.mu.Lock()
	if jsa.streams[mset.name] == mset {
		delete(jsa.streams, mset.name)
	}
	jsa.mu.Unlock()
	_ = mset.storeSafely("delete", mset.st().Delete)
}

// stopReplicaIf stops mset (deleting its messages) if it is still the account's
// replica of its stream and the stream is not placed here (again).
func (jsa *jsAccount) stopReplicaIf(mset *stream) {
	jc := jsa.js.cluster
	jsa.mu.Lock()
	sa := jc.assignment(jsa.acc.Name, mset.name)
	if jsa.streams[mset.name] != mset || sa != nil && jc.isPeer(sa) {
		jsa.mu.Unlock()
		return
	}
	delete(jsa.streams, mset.name)
	jsa.mu.Unlock()
	// The messages go, the raft log stays (sa nil: the group directory is
	// kept). The removal that let this replica go may not be committed,
	// or not durable on a quorum: after a power loss the group can come
	// back with this server still a member, and replaying the meta log
	// revives the replica. With its log it votes and acknowledges only on
	// what it really holds; without it, it came back as a founding member
	// with an empty log, and its vote could elect a leader missing
	// committed entries (the stream simulator, seed 2845). The directory
	// goes when the stream is deleted or the replica rejoins.
	jsa.stopReplicaOf(mset, true, nil)
}

// rejoinReplica replaces mset, a replica removed from its group, with an
// empty one that joins the group again (the stream is placed here again).
// Its log is retired, not deleted (stream_retire.go): the replica may
// still be a member (it cannot tell a removal from a leader it does not
// hear), so the new one recovers, voting only as the old log would have.
func (jsa *jsAccount) rejoinReplica(mset *stream, sa *streamAssignment) {
	jsa.mu.Lock()
	if jsa.streams[mset.name] != mset {
		jsa.mu.Unlock()
		return
	}
	delete(jsa.streams, mset.name)
	jsa.mu.Unlock()
	jsa.stopReplicaOf(mset, true, nil)
	jsa.js.retireGroupDir(sa)
	if _, err := jsa.startReplica(sa, startJoin); err != nil {
		jsa.js.srv.Errorf("JetStream cluster: rejoining stream %q: %v", sa.Config.Name, err)
	}
}

// stopReplica stops the group and removes the replica (and its data when
// the stream was deleted).
func (jsa *jsAccount) stopReplica(name string, deleteData bool, sa *streamAssignment) {
	done, _ := jsa.claim(name, nil, nil) // after a start in progress (startReplica)
	jsa.mu.Lock()
	mset := jsa.streams[name]
	delete(jsa.streams, name)
	jsa.unclaimLocked(name, done)
	jsa.mu.Unlock()
	if mset == nil {
		if deleteData && sa != nil { // the log a departed replica kept
			jsa.js.removeGroupDir(sa)
		}
		return
	}
	jsa.stopReplicaOf(mset, deleteData, sa)
}

// stopReplicaOf stops a replica already taken out of jsa.streams.
func (jsa *jsAccount) stopReplicaOf(mset *stream, deleteData bool, sa *streamAssignment) {
	name := mset.name
	mset.mu.Lock()
	g, leading := mset.group, mset.leader
	mset.mu.Unlock()
	if g != nil {
		term := g.softState().Term
		g.stop()
		if sm, ok := g.sm.(*streamSM); ok {
			sm.stopped()
		}
		if leading && jsa.js.cluster != nil { // nobody else would say it stopped leading
			jsa.js.cluster.announce(jsa.acc.Name, name, term, true)
		}
	}
	_ = mset.stop(deleteData)
	if deleteData && sa != nil {
		jsa.js.removeGroupDir(sa)
	}
}

func (mset *stream) subscribeDirect() {
	name := mset.name
	for _, subj := range []string{"$JS.API.DIRECT.GET." + name, "$JS.API.DIRECT.GET." + name + ".>"} {
		if sub, err := mset.jsa.acc.subscribeInternal(subj, "_sys_", mset.directGet); err == nil {
			mset.mu.Lock()
			closed := mset.closed
			if !closed {
				mset.subs = append(mset.subs, sub)
			}
			mset.mu.Unlock()
			if closed { // stopped meanwhile: its subscriptions are gone
				mset.jsa.acc.unsubscribe(sub)
			}
		}
	}
}

// leaderChanged starts or stops serving publishes and tells every server.
// A replica serves only once it leads and has applied its whole log.
//
// It runs at every change of the group's soft state (role, leader, term),
// one call at a time (raftGroup.tell): on the group goroutine, but for a
// stop the wedge's deposal tells from its own goroutine (raft_wedge.go)
// while the group's goroutine may still apply. After a kill -9 thousands of groups change at
// once (issue 20: 10,000 streams), so a follower takes the routes' lock
// only when it stops leading (the peers a resignation waits for), and
// the leader map's only to tell it something new (supersedes).
func (mset *stream) leaderChanged(st raft.SoftState) {
	lead := st.Role == raft.Leader && st.LeaderReady
	var peers []string
	if !lead && mset.isLeader() { // mset.leader changes only here
		peers = mset.jsa.js.srv.routePeers()
	}
	mset.mu.Lock()
	was := mset.leader
	mset.leader = lead
	if was && !lead {
		mset.resignedLocked(st.Term, peers)
	}
	closed := mset.closed
	name := mset.cfg.Name
	mset.mu.Unlock()
	jc := mset.jsa.js.cluster
	if closed || jc == nil {
		return
	}
	acc := mset.jsa.acc.Name
	switch {
	case lead && !was:
		mset.startServing()
		jc.announce(acc, name, st.Term, false)
		jc.leaders.wantReconcile(mset) // reannounce checks its membership
	case !lead && was:
		mset.stopServing()
		jc.announce(acc, name, st.Term, true)
	case !lead && mset.supersedes.newer(st):
		jc.leaders.supersede(leaderKey(acc, name), st.Lead, st.Term)
	}
}

// supersedeMemo is the leader and term a follower last told the leader
// map (group goroutine only).
type supersedeMemo struct {
	lead raft.ID
	term uint64
	set  bool
}

// newer reports whether st names another leader or term than the last
// call, and remembers it: the map dropped what that call superseded, and
// what was announced since is not older (leaderMap.set keeps the newest
// term).
func (m *supersedeMemo) newer(st raft.SoftState) bool {
	if m.set && m.lead == st.Lead && m.term == st.Term {
		return false
	}
	m.lead, m.term, m.set = st.Lead, st.Term, true
	return true
}

func (mset *stream) startServing() {
	mset.mu.Lock()
	subjects := slices.Clone(mset.cfg.Subjects)
	mset.mu.Unlock()
	subs := mset.subscribeIngest(subjects)
	if sub := mset.startConsumersLeading(); sub != nil {
		subs = append(subs, sub)
	}
	mset.mu.Lock()
	if mset.closed {
		mset.mu.Unlock()
		for _, sub := range subs {
			mset.jsa.acc.unsubscribe(sub)
		}
		return
	}
	mset.ingest = append(mset.ingest, subs...)
	mset.scheduleExpiryLocked()
	mset.mu.Unlock()
}

func (mset *stream) stopServing() {
	mset.mu.Lock()
	subs := mset.ingest
	mset.ingest = nil
	if mset.expiry != nil {
		mset.expiry.Stop()
		mset.expiry = nil
	}
	mset.mu.Unlock()
	for _, sub := range subs {
		mset.jsa.acc.unsubscribe(sub)
	}
	mset.stopConsumersLeading()
}

// proposeInbound is the leader's side of a publish to a replicated
// stream: stateless checks, a timestamp, a proposal.
func (mset *stream) proposeInbound(c *client, subject, reply string, hdr, msg []byte) {
	s := mset.jsa.js.srv
	lattrace.Mark("proposeInbound", len(msg))
	if e := mset.jsa.checkStorage(mset, storedMsgSize(subject, hdr, msg)); e != nil {
		if reply != "" {
			s.deliver(nil, mset.jsa.acc, reply, "", nil, mset.pubAckJSON(pubOutcome{err: e}, ""))
		}
		return
	}
	e := &streamEntry{op: streamOpMsg, origin: s.Name(), reply: reply,
		m: inMsg{subj: subject, hdr: hdr, msg: msg, ts: s.clock.Now().UnixNano()}}
	mset.proposeFrom(c, e)
}

// propose sends an entry to the group; a refused proposal is answered
// with "temporarily unavailable" (see proposed).
func (mset *stream) propose(e *streamEntry) { mset.proposeFrom(nil, e) }

// proposeFrom is propose for an entry of client c's read (nil: of none),
// whose group is woken at the end of the read (propose_held.go).
func (mset *stream) proposeFrom(c *client, e *streamEntry) {
	mset.mu.Lock()
	g := mset.group
	mset.mu.Unlock()
	if g == nil { // the group is still starting
		mset.refuse(e.reply)
		return
	}
	if c == nil || c.route != nil {
		g.Propose(encodeStreamEntry(e), mset)
		return
	}
	holdProposal(c, g, encodeStreamEntry(e), mset) // propose_held.go
}

// proposed answers the client of a refused proposal 10008 so that it
// retries at once; an accepted one is answered once applied.
//
// Known hazard (issue 19, left open): after losing the lead this server
// refuses what it still receives, but the new leader may have received
// the same publish or API request (every server gets every API request,
// and a publish goes to both while both have the stream's subjects
// subscribed) and applied it; the 10008 may then reach the client first
// and say "not stored" for a stored message. Staying silent on
// ErrNotLeader (what nats-server's publish path does) closes it, but then
// writers time out at every leader change instead of retrying at once:
// TestJetStreamClusterConcurrentExpected/LeaderStepdownMidway, whose
// writers retry only on 10008 and no responders, fails under load.
//
// An entry made from an API request (a consumer create or delete, a purge,
// a message delete) is refused in silence: every server gets every API
// request, so a new leader that took the same request applies it while
// this one refuses it (TestJetStreamClusterNoFalseRejectionOnLeaderChange
// saw a consumer created and answered 10008). Only publishes keep the 10008.
func (mset *stream) proposed(data []byte, err error) {
	if err != nil && len(data) > 0 && data[0] == streamOpMsg {
		mset.refuse(entryReply(data))
	}
}

// refuse answers reply with "temporarily unavailable" so the client can
// retry.
func (mset *stream) refuse(reply string) {
	if reply != "" {
		b, _ := json.Marshal(&apiResponse{Type: apiTypePrefix + "error_response", Error: errClusterNotAvail()})
		mset.jsa.js.srv.deliver(nil, mset.jsa.acc, reply, "", nil, b)
	}
}

// applyEntry applies one committed entry; the proposer answers.
func (mset *stream) applyEntry(e *streamEntry, index uint64, wake map[*client]struct{}) {
	s := mset.jsa.js.srv
	mset.mu.Lock()
	if mset.closed {
		mset.mu.Unlock()
		return
	}
	locked := true
	defer mset.releaseOnPanic(&locked) // stream_store_panic.go
	var resp []byte
	var flush []*consumer
	switch e.op {
	case streamOpMsg:
		mset.applyTS = e.m.ts
		out := mset.processJetStreamMsg(&e.m)
		if mset.leader && out.err == nil && !out.dup && len(mset.consumers) > 0 {
			flush = mset.pumpConsumersLocked()
		}
		// Only the server that proposed the entry answers the client; not
		// with a failure of its own store, which the others may not share.
		if e.reply != "" && !mset.cfg.NoAck && e.origin == s.Name() && (out.err == nil || mset.storeBroken.Load() == nil) {
			resp = mset.pubAckJSON(out, s.getOpts().JetStreamDomain)
		}
		if mset.leader && mset.expiry == nil && mset.cfg.MaxAge > 0 {
			mset.scheduleExpiryLocked()
		}
	case streamOpPurge:
		resp = mset.applyPurgeEntry(&e.purge)
	case streamOpDelete:
		resp = mset.applyDeleteEntry(e.seq, e.erase)
	case streamOpExpire:
		mset.applyExpire(e.cutoff)
		if mset.leader {
			mset.scheduleExpiryLocked()
		}
	case streamOpConfig:
		oldRet := mset.cfg.Retention
		mset.cfg = *e.cfg
		mset.storeWriteFailed(mset.st().UpdateLimits(limitsOf(e.cfg)))
		mset.retentionChangedLocked(oldRet) // from the log, so on every replica alike
		if mset.leader {
			mset.scheduleExpiryLocked() // a changed max_age: re-armed (or stopped)
		}
	case streamOpConsumer:
		var o *consumer
		if resp, o = mset.applyConsumerEntryLocked(e, index); o != nil {
			flush = append(flush, o)
		}
	}
	mset.mu.Unlock()
	locked = false
	if e.op == streamOpConfig {
		mset.syncIngest() // the subjects may have changed (stream_ingest.go)
		if e.origin == s.Name() && e.reply != "" {
			go mset.answerUpdate(e.reply)
		}
	}
	flushConsumers(flush)
	if resp != nil && e.origin == s.Name() && e.reply != "" {
		s.deliverBatch(wake, mset.jsa.acc, e.reply, "", nil, resp) // an AckSync's answer is empty
		lattrace.Mark("ack.queued", int(index))
	}
}

func (mset *stream) applyPurgeEntry(req *purgeRequest) []byte {
	resp := &purgeResponse{apiResponse: apiResponse{Type: apiTypePrefix + "stream_purge_response"}}
	switch {
	case mset.cfg.Sealed:
		resp.Error = errSealed()
	case mset.cfg.DenyPurge:
		resp.Error = errPurgeFailed("stream purge not permitted")
	default:
		n, err := mset.applyPurge(req)
		if err != nil && mset.brokeOn(err) {
			return nil // this replica's failure: the group halts (stream_store_failure.go)
		}
		if err != nil {
			resp.Error = errPurgeFailed(err.Error())
		} else {
			resp.Success, resp.Purged = true, n
		}
	}
	b, _ := json.Marshal(resp)
	return b
}

func (mset *stream) applyDeleteEntry(seq uint64, erase bool) []byte {
	resp := &successResponse{apiResponse: apiResponse{Type: apiTypePrefix + "stream_msg_delete_response"}}
	switch {
	case mset.cfg.Sealed:
		resp.Error = errSealed()
	case mset.cfg.DenyDelete:
		resp.Error = errMsgDeleteFailed("message delete not permitted")
	default:
		ok, err := mset.applyDelete(seq, erase)
		switch {
		case err != nil && mset.brokeOn(err):
			return nil // this replica's failure: the group halts (stream_store_failure.go)
		case err != nil:
			resp.Error = errMsgDeleteFailed(err.Error())
		case !ok:
			resp.Error = errSequenceNotFound(seq)
		default:
			resp.Success = true
		}
	}
	b, _ := json.Marshal(resp)
	return b
}

// isClustered reports whether the stream is replicated through raft.
func (mset *stream) isClustered() bool { return mset.replicated }

// isLeader reports whether this replica serves the stream: a stream on
// one server always; a replicated one only while it leads its group and
// has applied its whole log (leaderChanged), never while its group is
// still starting (its store is then empty or behind).
func (mset *stream) isLeader() bool {
	if !mset.replicated {
		return true
	}
	mset.mu.Lock()
	defer mset.mu.Unlock()
	return mset.leader
}

// clusterInfo is StreamInfo's cluster section: the leader and, as the
// leader's raft progress shows them, the other replicas.
func (mset *stream) clusterInfo() *ClusterInfo {
	s := mset.jsa.js.srv
	mset.mu.Lock()
	g, name := mset.group, mset.name
	mset.mu.Unlock()
	if g == nil {
		return &ClusterInfo{Leader: s.Name()}
	}
	jc := mset.jsa.js.cluster
	sa := jc.assignment(mset.jsa.acc.Name, name)
	ci := &ClusterInfo{Name: s.ClusterName(), Leader: jc.streamLeader(mset.jsa.acc.Name, name)}
	if sa == nil {
		return ci
	}
	mset.fillReplicas(ci, sa, g.statusSnapshot())
	return ci
}

// clusterInfoLocked is clusterInfo under mset.mu (inside the apply: a
// CONSUMER.CREATE's answer), from the group's last known status: asking
// the group for a fresh one waits for its goroutine, never under a lock.
func (mset *stream) clusterInfoLocked() *ClusterInfo {
	s, g := mset.jsa.js.srv, mset.group
	if g == nil {
		return &ClusterInfo{Leader: s.Name()}
	}
	jc := mset.jsa.js.cluster
	ci := &ClusterInfo{Name: s.ClusterName(), Leader: jc.streamLeader(mset.jsa.acc.Name, mset.name)}
	if mset.leader {
		ci.Leader = s.Name()
	}
	if sa := jc.assignment(mset.jsa.acc.Name, mset.name); sa != nil {
		g.mu.Lock()
		st := g.status
		g.mu.Unlock()
		mset.fillReplicas(ci, sa, st)
	}
	return ci
}

// fillReplicas adds the replicas other than the leader, with what st
// knows of their progress.
func (mset *stream) fillReplicas(ci *ClusterInfo, sa *streamAssignment, st raft.Status) {
	for _, p := range sa.Peers {
		if p == ci.Leader {
			continue
		}
		pi := &PeerInfo{Name: p}
		if pr, ok := st.Progress[raftID(p)]; ok {
			pi.Current = pr.Match >= st.Commit
			pi.Lag = st.LastIndex - min(st.LastIndex, pr.Match)
			// Heard from within IdleTicks+1 ticks: report the middle of
			// that last tick (0 reads as "never seen" to clients).
			pi.Active = time.Duration(pr.IdleTicks)*raftTick + raftTick/2
			pi.Offline = !pr.RecentActive
		}
		ci.Replicas = append(ci.Replicas, pi)
	}
}

// groupLeads reports whether the stream's group led as of the last Ready
// its goroutine took (a stream on one server always leads). The serving
// flag (isLeader) drops only once the Ready that demoted the group is
// persisted and processed, a slow fsync later: a replica still flagged
// whose group no longer leads must not answer a call that changes the
// stream, since the new leader may carry it out and answer (a stepdown
// it took so answered 10008 beside the new leader's success).
func (mset *stream) groupLeads() bool {
	g := mset.groupNow()
	return g == nil || g.leads.Load()
}

// groupNow is the stream's raft group, nil while it has none.
func (mset *stream) groupNow() *raftGroup {
	mset.mu.Lock()
	defer mset.mu.Unlock()
	return mset.group
}
