package server

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

type peerRemoveRequest struct {
	Peer string `json:"peer"`
}

// streamPeerRemove takes a server out of a replicated stream. The meta
// leader answers it: it records the new placement in the meta log (with a
// replacement server when one fits, as nats-server does). Then the stream's
// leader brings the raft membership in line (reconcilePeers), the
// replacement starts an empty replica that joins, and the removed server
// drops its replica (a removed leader hands leadership over first).
func (r *apiRequest) streamPeerRemove() any {
	name := r.streamName("STREAM.PEER.REMOVE.")
	fail := func(e *ApiError) any { return &successResponse{apiResponse: apiResponse{Error: e}} }
	var req peerRemoveRequest
	if e := r.unmarshal(&req); e != nil {
		return fail(e)
	}
	jc := r.jsa.js.cluster
	sa := jc.assignment(r.jsa.acc.Name, name)
	switch {
	case sa == nil:
		return fail(errStreamNotFound())
	case req.Peer == "" || !slices.Contains(sa.Peers, req.Peer):
		return fail(apiErr(400, 10040, "peer not a member"))
	case len(sa.Peers) == 1:
		return fail(apiErr(400, 10003, "bad request: can not remove the only peer"))
	}
	nsa := *sa
	nsa.Peers = slices.DeleteFunc(slices.Clone(sa.Peers), func(p string) bool { return p == req.Peer })
	repl := jc.replacementPeer(sa, req.Peer)
	if repl != "" {
		nsa.Peers = append(nsa.Peers, repl)
	}
	jc.mu.Lock()
	g := jc.meta
	jc.mu.Unlock()
	if g == nil {
		return fail(errClusterNotAvail())
	}
	b, _ := json.Marshal(&metaEntry{Op: "peers", SA: &nsa, Origin: jc.js.srv.Name(), Remove: req.Peer, Add: repl})
	done := make(chan error, 1)
	g.Propose(b, doneFunc(func(err error) { done <- err }))
	clk := jc.js.srv.clock
	proposed := clk.NewTimer(2 * time.Second)
	defer proposed.Stop()
	select {
	case err := <-done:
		if err != nil {
			return fail(errClusterNotAvail())
		}
	case <-proposed.C():
		return fail(errClusterNotAvail())
	}
	// Answer once applied, so that the next request starts from this
	// placement (its replacement is chosen from it).
	deadline := clk.NewTimer(5 * time.Second)
	defer deadline.Stop()
	for {
		jc.mu.Lock()
		cur, changed := jc.streams[r.jsa.acc.Name][name], jc.changed
		jc.mu.Unlock()
		if cur == nil || !slices.Contains(cur.Peers, req.Peer) {
			return &successResponse{Success: true}
		}
		select {
		case <-changed:
		case <-deadline.C():
			return fail(errClusterNotAvail())
		case <-jc.js.srv.done:
			return fail(errClusterNotAvail())
		}
	}
}

// reconcilePeers brings the raft membership of the stream's group in line
// with its current placement, one change at a time (single-server
// changes, chosen by nextPeerChange). Only the leader acts; it is called
// when the placement changes, and then every leaderAnnounceEvery
// (reannounce) until the membership is in line or the replica does not
// lead, as it is for a new leader: a quiet group is not woken otherwise.
// The placement is read when the change is made, never from an older
// copy, and the call does not wait when the group is busy.
func (mset *stream) reconcilePeers() {
	if jc := mset.jsa.js.cluster; jc != nil {
		mset.reconcileOnce(jc.leaders.wantReconcile(mset))
	}
}

// reconcileOnce makes the next change of wish gen (reconcilePeers).
func (mset *stream) reconcileOnce(gen uint64) {
	mset.mu.Lock()
	g, name := mset.group, mset.cfg.Name
	mset.mu.Unlock()
	jc := mset.jsa.js.cluster
	if g == nil || jc == nil {
		return
	}
	acc := mset.jsa.acc.Name
	g.tryControl(func(n *raft.Node) {
		sa := jc.assignment(acc, name)
		st := n.Status()
		if sa == nil || st.Role != raft.Leader || !st.LeaderReady {
			jc.leaders.reconciled(mset, gen)
			return
		}
		want := make([]raft.ID, 0, len(sa.Peers))
		for _, p := range sa.Peers {
			want = append(want, raftID(p))
		}
		if cc, ok := nextPeerChange(st, want); ok {
			_ = n.ProposeConfChange(cc)
			return
		}
		jc.leaders.reconciled(mset, gen)
	})
}

// nextPeerChange chooses the next single-server change that brings the
// leader's membership (st.Peers) to want, or reports none left. Additions
// come before removals, so that a move never shrinks the group below its
// replica count: removed first, two moves in a row left a replicated
// stream with one member, whose data was then the only copy (simulator
// seed 777213). The exception is a member the leader has not heard from
// for an election timeout: it only weighs on the quorum, so it goes first,
// the least recently heard first, but never below one member short of
// want (a second dead member waits for the additions).
func nextPeerChange(st raft.Status, want []raft.ID) (raft.ConfChange, bool) {
	var remove, add []raft.ID
	for _, id := range st.Peers {
		if !slices.Contains(want, id) {
			remove = append(remove, id)
		}
	}
	for _, id := range want {
		if !slices.Contains(st.Peers, id) {
			add = append(add, id)
		}
	}
	idle := func(id raft.ID) int {
		if id == st.ID {
			return 0 // the leader itself
		}
		if pr, ok := st.Progress[id]; ok {
			return pr.IdleTicks
		}
		return raft.DefaultElectionTicks // never heard from
	}
	slices.SortStableFunc(remove, func(a, b raft.ID) int { return idle(b) - idle(a) })
	after := len(st.Peers) - 1
	switch {
	case len(remove) > 0 && idle(remove[0]) >= raft.DefaultElectionTicks && after >= len(want)-1 && after > 0:
		return raft.ConfChange{Type: raft.RemovePeer, ID: remove[0]}, true
	case len(add) > 0:
		return raft.ConfChange{Type: raft.AddPeer, ID: add[0]}, true
	case len(remove) > 0:
		return raft.ConfChange{Type: raft.RemovePeer, ID: remove[0]}, true
	}
	return raft.ConfChange{}, false
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}
