package server

import (
	"slices"
	"time"

	"github.com/tern-mq/nats-server/internal/raft"
)

type peerRemoveRequest struct {
	Peer string `json:"peer"`
}

// streamPeerRemove takes a server out of a replicated stream: the stream's
// group removes the member (a raft membership change), and the meta group
// records the new placement, which makes the removed server drop its
// replica. Answered by the stream leader.
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
	mset.mu.Lock()
	g := mset.group
	mset.mu.Unlock()
	done := make(chan error, 1)
	g.control(func(n *raft.Node) {
		done <- n.ProposeConfChange(raft.ConfChange{Type: raft.RemovePeer, ID: raftID(req.Peer)})
	})
	select {
	case err := <-done:
		if err != nil {
			return fail(errClusterNotAvail())
		}
	case <-time.After(2 * time.Second):
		return fail(errClusterNotAvail())
	}
	nsa := *sa
	nsa.Peers = slices.DeleteFunc(slices.Clone(sa.Peers), func(p string) bool { return p == req.Peer })
	jc.proposeMeta(&metaEntry{Op: "peers", SA: &nsa, Origin: jc.js.srv.Name()}, func(*ApiError) {})
	return &successResponse{Success: true}
}
