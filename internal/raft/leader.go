package raft

import (
	"errors"
	"fmt"
	"slices"
)

// propose appends one entry as leader. Sending is deferred to the next
// Ready, so that every proposal made between two Ready calls travels in the
// same append messages (batching).
func (r *raft) propose(t EntryType, data []byte) error {
	if r.role != Leader {
		return ErrNotLeader
	}
	if r.ls.transferee != None {
		return ErrProposalDropped
	}
	e := Entry{Type: t, Data: data}
	if r.maxUncommitted > 0 && r.ls.uncommitted > 0 && r.ls.uncommitted+e.size() > r.maxUncommitted {
		return ErrProposalDropped
	}
	r.ls.uncommitted += e.size()
	r.appendAsLeader([]Entry{e})
	return nil
}

func (r *raft) proposeConfChange(cc ConfChange) error {
	if r.role != Leader {
		return ErrNotLeader
	}
	if r.ls.transferee != None {
		return ErrProposalDropped
	}
	if r.conf.lastIndex() > r.log.committed || !r.log.matchTerm(r.log.committed, r.term) {
		return ErrConfChangePending
	}
	if _, err := cc.applyTo(r.conf.current()); err != nil {
		return err
	}
	r.appendAsLeader([]Entry{{Type: EntryConfChange, Data: cc.Marshal()}})
	return nil
}

// appendAsLeader stamps ents with the current term and the next indexes and
// appends them to the leader's log.
func (r *raft) appendAsLeader(ents []Entry) {
	last := r.log.lastIndex()
	for i := range ents {
		ents[i].Term = r.term
		ents[i].Index = last + 1 + uint64(i)
	}
	r.appendToLog(ents)
	if r.role != Leader {
		return
	}
	r.ls.idleTicks = 0
	r.ls.dirty = true
	// The leader counts itself for these entries once they are durable
	// here (persisted), not now: two followers that synced commit them
	// in a group of three while its own sync still runs.
}

// persisted records that the log is durable up to entry (i, t): the
// unstable entries up to it leave, and a leader counts itself up to i.
// Entries replaced since, or never handed to the driver, are ignored.
func (r *raft) persisted(i, t uint64) {
	if i >= r.log.u.inProgress || !r.log.matchTerm(i, t) {
		return
	}
	r.log.u.stableTo(i, t)
	if r.role == Leader && r.ls.prs[r.id].maybeUpdate(i) {
		r.maybeCommit()
	}
}

// maybeCommit advances the commit index to the highest index a quorum of
// members holds, if that entry is of the current term (Raft §5.4.2).
func (r *raft) maybeCommit() bool {
	members := r.conf.current()
	m := r.ls.scratch[:0]
	for _, id := range members {
		var match uint64
		if pr := r.ls.prs[id]; pr != nil {
			match = pr.match
		}
		m = append(m, match)
	}
	r.ls.scratch = m
	slices.Sort(m)
	idx := m[len(m)-quorum(len(m))]
	if !r.log.maybeCommit(idx, r.term) {
		return false
	}
	if r.deferCommit {
		r.ls.commitOwed = true
	} else {
		r.ls.dirty, r.ls.commitDirty = true, true
	}
	r.dropRemoved()
	if !r.conf.contains(r.id) && r.conf.lastIndex() <= r.log.committed {
		r.resign() // a member holding the whole log campaigns at once
	}
	return true
}

// resign ends this leader's leadership in its term (Node.Resign, and a
// leader whose own removal committed): a member other than itself that
// holds its whole log is told to campaign at once (MsgTimeoutNow, a
// transfer: its voters grant past their leases, which protect no one, as
// this node holds no lease once it follows), and it becomes a follower
// of nobody in the same term. Safe at any moment: it keeps its term and
// its vote (for itself), so it elects no one else in this term, and a
// leader of a later term deposes nothing of its (it leads no more).
func (r *raft) resign() {
	if r.role != Leader {
		return
	}
	best, bestMatch := None, uint64(0)
	for _, id := range r.conf.current() {
		if pr := r.ls.prs[id]; id != r.id && pr != nil && pr.match > bestMatch {
			best, bestMatch = id, pr.match
		}
	}
	if best != None && bestMatch == r.log.lastIndex() {
		r.send(Message{Type: MsgTimeoutNow, To: best})
	}
	r.becomeFollower(r.term, None)
}

func (r *raft) transferLeadership(to ID) error {
	if r.role != Leader {
		return ErrNotLeader
	}
	if to == r.id {
		return nil
	}
	pr := r.ls.prs[to]
	if pr == nil || !r.conf.contains(to) {
		return ErrUnknownPeer
	}
	if r.ls.transferee == to {
		return nil
	}
	r.ls.transferee = to
	r.ls.lease.barred = true // to campaigns past its voters' leases (lease.go)
	r.t.electionElapsed = 0  // the transfer is abandoned after an election timeout
	if pr.match == r.log.lastIndex() {
		r.send(Message{Type: MsgTimeoutNow, To: to})
	} else {
		r.ls.dirty = true
	}
	return nil
}

func (r *raft) tickLeader() {
	r.t.heartbeatElapsed++
	r.t.electionElapsed++
	r.ls.idleTicks++
	r.flushCommit() // held back for a tick at most
	for _, pr := range r.ls.prs {
		pr.idleTicks++
		if pr.state == stateSnapshot {
			// The snapshot or its acknowledgement may have been lost.
			if pr.snapTicks++; pr.snapTicks > r.t.electionTimeout {
				pr.becomeProbe()
				r.ls.dirty = true
			}
		}
	}
	r.dropRemoved()
	if r.t.electionElapsed >= r.t.electionTimeout {
		r.t.electionElapsed = 0
		switch {
		case !r.checkQuorum || r.quorumActive():
			r.ls.cqWaited = 0
		case r.checkQuorumWaits():
			r.noteCheckQuorum(CheckQuorumWait) // its followers may answer late only (check_quorum.go)
		default:
			if r.quorumLive() {
				r.noteCheckQuorum(CheckQuorumStepDownLive)
			} else {
				r.noteCheckQuorum(CheckQuorumStepDown)
			}
			r.becomeFollower(r.term, None)
			return
		}
		r.ls.transferee = None
	}
	if r.t.heartbeatElapsed >= r.t.heartbeatTimeout {
		r.t.heartbeatElapsed = 0
		if !r.maybeQuiesce() {
			r.startRound()
		}
	}
}

// quorumActive reports whether a quorum of members was heard from since the
// last call, and starts a new round.
//
// The leader of term 1 (Config.LeadsFirstTerm) also counts a member it
// never heard from while that member's server is live: the member has not
// started the group yet (a new stream's replicas start as their servers
// apply its creation, which a busy server may do seconds later). An
// elected leader heard from a quorum (its votes), so its followers run
// the group already; the term-1 leader stepped down after two election
// timeouts when its followers started late, and the stream had no leader
// for another election. A member that answered once, or whose server is
// down, counts as for any leader. The grace lasts firstTermGraceRounds
// rounds (5–10 s with the server's timing): a member whose server is live
// but whose group never starts does not keep a leader that cannot commit.
// firstTermGraceRounds bounds the term-1 leader's grace for members it
// never heard from (quorumActive).
const firstTermGraceRounds = 10

func (r *raft) quorumActive() bool {
	members := r.conf.current()
	grace := r.ls.firstTerm && r.ls.graceRounds < firstTermGraceRounds
	if grace {
		r.ls.graceRounds++
	}
	active := 0
	for _, id := range members {
		pr := r.ls.prs[id]
		if id == r.id || pr != nil && (pr.recentActive || grace && !pr.heard && r.health(id).Live) {
			active++
		}
		if pr != nil && id != r.id {
			pr.recentActive = false
		}
	}
	return active >= quorum(len(members))
}

func (r *raft) bcastHeartbeat() {
	for _, id := range r.ls.ids {
		if id == r.id {
			continue
		}
		pr := r.ls.prs[id]
		r.send(Message{Type: MsgHeartbeat, To: id, Commit: min(pr.match, r.log.committed), Index: r.ls.reads.round})
	}
}

func (r *raft) stepLeader(m Message) {
	pr := r.ls.prs[m.From]
	if pr == nil {
		return
	}
	pr.recentActive, pr.heard = true, true
	pr.idleTicks = 0
	pr.fresh = true
	switch m.Type {
	case MsgAppResp:
		r.handleAppResp(m, pr)
	case MsgReadIndex:
		_ = r.leaderRead(m.From, msgCtx(m)) // a dropped request times out at the follower
	case MsgHeartbeatResp:
		r.onHeartbeatResp(m, pr)
		if m.Reject {
			if m.RejectHint < pr.match { // it lost what it acknowledged (handleHeartbeat)
				pr.match = m.RejectHint
			}
			r.quiesceRefused(pr)
		}
		pr.probeSent = false
		if pr.state == stateReplicate && pr.inflights.full() {
			pr.inflights.freeFirst()
		}
		if pr.match < r.log.lastIndex() {
			// Something was lost: (re)send, even an empty append, so that
			// the follower's answer tells us where it stands.
			pr.sendEmpty = true
			r.ls.dirty = true
		}
	}
}

func (r *raft) handleAppResp(m Message, pr *progress) {
	r.ls.dirty = true
	if m.Reject {
		hint := m.RejectHint
		if m.LogTerm > 0 {
			hint, _ = r.log.findConflictByTerm(m.RejectHint, m.LogTerm)
		}
		pr.maybeDecrTo(m.Index, hint)
		return
	}
	if !pr.maybeUpdate(m.Index) {
		if pr.state == stateReplicate {
			pr.inflights.freeLE(m.Index)
		}
		return
	}
	switch pr.state {
	case stateProbe:
		pr.becomeReplicate()
	case stateSnapshot:
		if pr.match+1 >= r.log.firstIndex() {
			pr.becomeProbe()
			pr.becomeReplicate()
		}
	case stateReplicate:
		pr.inflights.freeLE(m.Index)
	}
	if r.maybeCommit() && r.role != Leader {
		return
	}
	if !r.conf.contains(m.From) {
		r.dropRemoved()
	}
	if m.From == r.ls.transferee && pr.match == r.log.lastIndex() {
		r.send(Message{Type: MsgTimeoutNow, To: m.From})
	}
}

// flush sends the appends that are due: new entries, commit updates and
// probes. It runs when the driver asks for a Ready.
func (r *raft) flush() {
	if r.role != Leader {
		return
	}
	r.flushReads()
	if !r.ls.dirty {
		return
	}
	r.ls.dirty = false
	told := true // every follower got an append, which carries the commit index
	for _, id := range r.ls.ids {
		if id == r.id {
			continue
		}
		pr := r.ls.prs[id]
		empty := pr.sendEmpty || r.ls.commitDirty
		pr.sendEmpty = false
		before := len(r.msgs)
		for r.maybeSendAppend(id, pr, empty) {
			empty = false
		}
		// A paused follower (its server down, or probed) is sent nothing
		// until it answers, commit or not.
		told = told && (len(r.msgs) > before || pr.paused())
	}
	if r.ls.commitDirty || told {
		r.ls.commitOwed = false
	}
	r.ls.commitDirty = false
}

// maybeSendAppend sends one append (or a snapshot) to a peer; it reports
// whether another append could follow right away.
func (r *raft) maybeSendAppend(to ID, pr *progress, sendIfEmpty bool) bool {
	if pr.paused() {
		return false
	}
	prev := pr.next - 1
	prevTerm, errT := r.log.term(prev)
	ents, errE := r.log.entries(pr.next, r.maxBatch)
	if errT != nil || errE != nil {
		r.sendSnapshot(to, pr)
		return false
	}
	if len(ents) == 0 && !sendIfEmpty {
		return false
	}
	r.send(Message{Type: MsgApp, To: to, Index: prev, LogTerm: prevTerm, Entries: ents, Commit: r.log.committed})
	if pr.state == stateProbe {
		pr.probeSent = true
		return false
	}
	if n := len(ents); n > 0 {
		last := ents[n-1].Index
		pr.next = last + 1
		pr.inflights.add(last, entsBytes(ents))
		return true
	}
	return false
}

func (r *raft) sendSnapshot(to ID, pr *progress) {
	if !pr.recentActive {
		return
	}
	snap, err := r.log.snapshot()
	if errors.Is(err, ErrSnapshotTemporarilyUnavailable) {
		return
	}
	if err != nil {
		panic(fmt.Sprintf("raft: reading snapshot: %v", err))
	}
	if snap.IsEmpty() {
		panic("raft: a follower needs a snapshot but storage has none")
	}
	r.send(Message{Type: MsgSnap, To: to, Snapshot: &snap})
	pr.becomeSnapshot(snap.Index)
}

// entsBytes is the data bytes of ents.
func entsBytes(ents []Entry) uint64 {
	n := uint64(0)
	for i := range ents {
		n += uint64(len(ents[i].Data))
	}
	return n
}

// flushCommit sends the commit index held back (Config.DeferCommit).
func (r *raft) flushCommit() {
	if r.role == Leader && r.ls.commitOwed {
		r.ls.dirty, r.ls.commitDirty = true, true // flush sends it
	}
}
