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
// changes): first removals, then additions. Only the leader acts; it is
// called when the placement changes, and then every leaderAnnounceEvery
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
		ids := make([]raft.ID, 0, len(sa.Peers))
		for _, p := range sa.Peers {
			ids = append(ids, raftID(p))
		}
		// The member heard from least recently goes first: while it is a
		// member, a removal of a live one would need its vote to commit.
		var remove []raft.ID
		for _, id := range st.Peers {
			if !slices.Contains(ids, id) {
				remove = append(remove, id)
			}
		}
		slices.SortStableFunc(remove, func(a, b raft.ID) int {
			return st.Progress[b].IdleTicks - st.Progress[a].IdleTicks
		})
		if len(remove) > 0 {
			_ = n.ProposeConfChange(raft.ConfChange{Type: raft.RemovePeer, ID: remove[0]})
			return
		}
		for _, id := range ids {
			if !slices.Contains(st.Peers, id) {
				_ = n.ProposeConfChange(raft.ConfChange{Type: raft.AddPeer, ID: id})
				return
			}
		}
		jc.leaders.reconciled(mset, gen)
	})
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
