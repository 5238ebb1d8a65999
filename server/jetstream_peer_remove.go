package server

import (
	"slices"
	"time"

	"github.com/tern-mq/nats-server/internal/raft"
)

type peerRemoveRequest struct {
	Peer string `json:"peer"`
}

// streamPeerRemove takes a server out of a replicated stream. The meta
// group records the new placement (with a replacement server when one is
// free, as nats-server does); the removed server drops its replica, the
// replacement starts an empty one, and the stream's leader brings its raft
// membership in line with the placement (reconcilePeers). Answered by the
// stream leader once the placement is proposed.
func (r *apiRequest) streamPeerRemove() any {
	name := r.streamName("STREAM.PEER.REMOVE.")
	fail := func(e *ApiError) any { return &successResponse{apiResponse: apiResponse{Error: e}} }
	var req peerRemoveRequest
	if e := r.unmarshal(&req); e != nil {
		return fail(e)
	}
	jc := r.jsa.js.cluster
	sa := jc.assignment(r.jsa.acc.Name, name)
	mset := r.jsa.lookup(name)
	switch {
	case sa == nil || mset == nil:
		return fail(errStreamNotFound())
	case req.Peer == "" || !slices.Contains(sa.Peers, req.Peer):
		return fail(apiErr(400, 10040, "peer not a member"))
	case len(sa.Peers) == 1:
		return fail(apiErr(400, 10003, "bad request: can not remove the only peer"))
	}
	nsa := *sa
	nsa.Peers = slices.DeleteFunc(slices.Clone(sa.Peers), func(p string) bool { return p == req.Peer })
	if repl := jc.replacementPeer(sa, req.Peer); repl != "" {
		nsa.Peers = append(nsa.Peers, repl)
	}
	done := make(chan *ApiError, 1)
	jc.proposeMeta(&metaEntry{Op: "peers", SA: &nsa, Origin: jc.js.srv.Name()}, func(e *ApiError) { done <- e })
	select {
	case e := <-done:
		if e != nil {
			return fail(e)
		}
	case <-time.After(50 * time.Millisecond): // proposed; the meta apply carries it out
	}
	return &successResponse{Success: true}
}

// reconcilePeers brings the raft membership of the stream's group in line
// with its placement, one change at a time (single-server changes): first
// removals, then additions. Only the leader acts; it is called when the
// placement changes and every leaderAnnounceEvery.
func (mset *stream) reconcilePeers(want []string) {
	mset.mu.Lock()
	g := mset.group
	mset.mu.Unlock()
	if g == nil {
		return
	}
	ids := make([]raft.ID, 0, len(want))
	for _, p := range want {
		ids = append(ids, raftID(p))
	}
	g.control(func(n *raft.Node) {
		st := n.Status()
		if st.Role != raft.Leader || !st.LeaderReady {
			return
		}
		for _, id := range st.Peers {
			if !slices.Contains(ids, id) {
				_ = n.ProposeConfChange(raft.ConfChange{Type: raft.RemovePeer, ID: id})
				return
			}
		}
		for _, id := range ids {
			if !slices.Contains(st.Peers, id) {
				_ = n.ProposeConfChange(raft.ConfChange{Type: raft.AddPeer, ID: id})
				return
			}
		}
	})
}
