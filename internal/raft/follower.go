package raft

import "fmt"

func (r *raft) stepFollower(m Message) {
	switch m.Type {
	case MsgApp, MsgHeartbeat, MsgSnap:
		r.t.electionElapsed = 0
		r.lead, r.leadStopped = m.From, false
		r.leadQuiet, r.heldPreVote = false, nil // a quiesce heartbeat sets it again
		r.unrank()
		switch m.Type {
		case MsgApp:
			r.handleAppend(m)
		case MsgHeartbeat:
			r.handleHeartbeat(m)
		default:
			r.handleSnapshot(m)
		}
		r.rec.heard(m, r.log.committed, r.lastPosition())
	case MsgTimeoutNow:
		r.hup(true)
	case MsgReadIndexResp:
		r.addReadState(ReadState{Index: m.Index, Ctx: msgCtx(m)})
	}
}

// handleAppend applies the log-matching check of AppendEntries (Raft §5.3):
// accept entries that follow a matching (Index, LogTerm), truncate a
// conflicting tail, or reject with a hint so the leader can skip back a
// whole term at a time.
func (r *raft) handleAppend(m Message) {
	if m.Index < r.log.committed {
		r.send(Message{Type: MsgAppResp, To: m.From, Index: r.log.committed})
		return
	}
	if !r.log.matchTerm(m.Index, m.LogTerm) {
		hint := min(m.Index, r.log.lastIndex())
		hint, hintTerm := r.log.findConflictByTerm(hint, m.LogTerm)
		r.send(Message{Type: MsgAppResp, To: m.From, Index: m.Index, Reject: true,
			RejectHint: hint, LogTerm: hintTerm})
		return
	}
	lastNew := m.Index + uint64(len(m.Entries))
	if ci := r.log.findConflict(m.Entries); ci != 0 {
		if ci <= r.log.committed {
			panic(fmt.Sprintf("raft: entry %d conflicts with committed entry (commit %d)", ci, r.log.committed))
		}
		r.appendToLog(m.Entries[ci-m.Index-1:])
	}
	r.log.commitTo(min(m.Commit, lastNew))
	r.send(Message{Type: MsgAppResp, To: m.From, Index: lastNew})
}

// handleHeartbeat takes the leader's commit, which never exceeds what the
// leader knows this follower holds.
//
// A commit above our last index means the leader believes we hold entries
// we do not: we acknowledged them and lost them since (a log discarded as
// damaged, a tail lost with an unsynced write). The answer says so
// (Reject, RejectHint our last index), so the leader probes from what we
// have instead of waiting for a new entry to find out.
func (r *raft) handleHeartbeat(m Message) {
	lost := m.Commit > r.log.lastIndex()
	if !m.Quiesce {
		r.hbRound = max(r.hbRound, m.Index)
	}
	if !lost {
		r.log.commitTo(m.Commit)
		if r.quiesceFollower(m) {
			return
		}
	}
	// A refused quiesce heartbeat says so too: the leader believes this
	// follower holds its whole log (see quiesceRefused).
	r.send(Message{Type: MsgHeartbeatResp, To: m.From, Index: m.Index, Reject: lost || m.Quiesce, RejectHint: r.log.lastIndex()})
}

func (r *raft) handleSnapshot(m Message) {
	if m.Snapshot == nil {
		return
	}
	if r.restore(cloneSnapshot(*m.Snapshot)) {
		r.send(Message{Type: MsgAppResp, To: m.From, Index: r.log.lastIndex()})
		return
	}
	r.send(Message{Type: MsgAppResp, To: m.From, Index: r.log.committed})
}

// restore installs snapshot s unless the log already covers it. If the log
// holds s's last entry, only the commit index moves (the entries after it
// are kept, Raft §7).
func (r *raft) restore(s Snapshot) bool {
	if s.Index <= r.log.committed {
		return false
	}
	if r.log.matchTerm(s.Index, s.Term) {
		r.log.commitTo(s.Index)
		return false
	}
	r.log.restore(s)
	r.conf.reset(s.Index, s.Peers)
	return true
}
