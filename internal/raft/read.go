package raft

import "slices"

// ReadState answers a read request made with Node.ReadIndex: once the
// node's state machine has applied Index, a read of it is linearizable
// (it reflects every write acknowledged before the request was made).
type ReadState struct {
	Index uint64
	Ctx   []byte
}

// maxPendingReads bounds the reads a leader holds for confirmation, and the
// answers a node holds until the next Ready.
const maxPendingReads = 4096

// readRequest is a read waiting for the leader to confirm that it leads.
type readRequest struct {
	index uint64 // commit index recorded for the read
	round uint64 // heartbeat round that confirms it; 0 until index is recorded
	from  ID     // who asked: the leader itself or a follower
	ctx   []byte
}

// readQueue is the leader's state of its read requests. Rounds number the
// heartbeats: a request recorded while round R is the last one started
// waits for round R+1, whose heartbeats all leave after it; a quorum
// acknowledging round R+1 or later confirms it.
type readQueue struct {
	round   uint64        // last heartbeat round started
	pending []readRequest // by round (0 rounds first)
	dirty   bool          // a request waits for round+1 to start
}

// readIndex serves Node.ReadIndex (from == r.id) and a follower's
// forwarded request (MsgReadIndex).
func (r *raft) readIndex(from ID, ctx []byte) error {
	if r.role == Leader {
		return r.leaderRead(from, ctx)
	}
	if from != r.id {
		return ErrNotLeader
	}
	if r.lead == None || r.role != Follower {
		return ErrProposalDropped
	}
	r.send(Message{Type: MsgReadIndex, To: r.lead, Entries: []Entry{{Data: ctx}}})
	return nil
}

// leaderRead queues a request. Until the leader has committed an entry of
// its term its commit index may lag what earlier leaders committed, so the
// request waits (index and round 0) for the NoOp to commit.
func (r *raft) leaderRead(from ID, ctx []byte) error {
	q := &r.ls.reads
	if len(q.pending) >= maxPendingReads {
		return ErrProposalDropped
	}
	r.ls.idleTicks = 0 // see leaseRead
	if index, ok := r.leaseRead(); ok {
		r.answerRead(&readRequest{index: index, from: from, ctx: slices.Clone(ctx)})
		return nil
	}
	req := readRequest{from: from, ctx: slices.Clone(ctx)}
	if r.committedInTerm() {
		req.index, req.round = r.log.committed, q.round+1
		q.dirty = true
	}
	q.pending = append(q.pending, req)
	return nil
}

// committedInTerm reports whether the leader committed its NoOp.
func (r *raft) committedInTerm() bool { return r.log.committed >= r.ls.noopIndex }

// flushReads starts the round the queued requests wait for: one heartbeat
// per follower for all the requests made since the last Ready.
func (r *raft) flushReads() {
	q := &r.ls.reads
	if len(q.pending) == 0 || !r.committedInTerm() {
		return
	}
	for i := range q.pending {
		if req := &q.pending[i]; req.round == 0 {
			req.index, req.round = r.log.committed, q.round+1
			q.dirty = true
		}
	}
	if !q.dirty {
		return
	}
	r.startRound()
	r.advanceReads()
}

// startRound sends the next heartbeat round: every read recorded so far
// waits for this round or an earlier one, and its acknowledgement by a
// quorum renews the lease from now.
func (r *raft) startRound() {
	q := &r.ls.reads
	q.dirty = false
	q.round++
	r.noteRound(q.round)
	r.bcastHeartbeat()
}

// onHeartbeatResp records a follower's acknowledgement of a round.
func (r *raft) onHeartbeatResp(m Message, pr *progress) {
	if m.Index > pr.readAck && m.Index <= r.ls.reads.round {
		pr.readAck = m.Index
		r.renewLease(r.confirmedRound())
		r.advanceReads()
	}
}

// confirmedRound is the latest round a quorum of members acknowledged
// (the leader counting for the latest round).
func (r *raft) confirmedRound() uint64 {
	q := &r.ls.reads
	members := r.conf.current()
	acks := r.ls.scratch[:0]
	for _, id := range members {
		var ack uint64
		if id == r.id {
			ack = q.round
		} else if pr := r.ls.prs[id]; pr != nil {
			ack = pr.readAck
		}
		acks = append(acks, ack)
	}
	r.ls.scratch = acks
	slices.Sort(acks)
	return acks[len(acks)-quorum(len(acks))]
}

// advanceReads answers the requests whose round a quorum of members
// (the leader counting for the latest round) acknowledged.
func (r *raft) advanceReads() {
	q := &r.ls.reads
	if len(q.pending) == 0 || q.pending[0].round == 0 {
		return
	}
	confirmed := r.confirmedRound()
	k := 0
	for k < len(q.pending) && q.pending[k].round != 0 && q.pending[k].round <= confirmed {
		r.answerRead(&q.pending[k])
		k++
	}
	q.pending = slices.Delete(q.pending, 0, k)
}

func (r *raft) answerRead(req *readRequest) {
	if req.from == r.id {
		r.addReadState(ReadState{Index: req.index, Ctx: req.ctx})
		return
	}
	r.send(Message{Type: MsgReadIndexResp, To: req.from, Index: req.index, Entries: []Entry{{Data: req.ctx}}})
	// A lease answers at once, possibly with a commit index held back
	// (DeferCommit) that the follower must apply before it serves.
	r.flushCommit()
}

func (r *raft) addReadState(rs ReadState) {
	if len(r.readStates) < maxPendingReads {
		r.readStates = append(r.readStates, rs)
	}
}

// msgCtx is the request context a read message carries in its one entry.
func msgCtx(m Message) []byte {
	if len(m.Entries) == 0 {
		return nil
	}
	return slices.Clone(m.Entries[0].Data)
}
