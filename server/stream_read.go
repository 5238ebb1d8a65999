package server

import (
	"encoding/json"
	"strings"
)

// Reads of a replicated stream's messages are linearizable: STREAM.MSG.GET
// (answered by the leader) and direct gets (answered by any replica) are
// served only once the replica has applied everything the group had
// committed when the read was made, as its leader confirms with a read
// index (raft_read.go). A paused or deposed leader therefore never answers
// from its old state, and a KV Get through any server sees every Put
// acknowledged before it. jetstream { stale_direct_reads: true } serves
// direct gets at once from the replica's state instead, as nats-server
// does (possibly stale).

// readLinearizable runs serve once the replica's state reflects every
// write acknowledged before the call (err nil), or tells it that it
// cannot know (err set: no read index came in time, the group stopped).
// A stream that is not replicated serves at once.
func (mset *stream) readLinearizable(serve func(err error, wake map[*client]struct{})) {
	if !mset.replicated {
		serve(nil, nil)
		return
	}
	g := mset.groupNow()
	if g == nil { // the group is still starting
		serve(errGroupStopped, nil)
		return
	}
	g.Read(serve)
}

// staleDirectReads reports whether direct gets skip the read index.
func (mset *stream) staleDirectReads() bool {
	return mset.jsa.js.srv.getOpts().JetStreamStaleDirectReads
}

// msgGetLater answers a STREAM.MSG.GET once the read is linearizable. A
// read that cannot be made so is answered "temporarily unavailable" when
// the client is connected here, and not at all for one routed here (the
// client times out and retries).
func (r *apiRequest) msgGetLater(mset *stream, req *msgGetRequest) {
	reply, local := strings.Clone(r.reply), r.c != nil && r.c.route == nil
	acc, s := r.jsa.acc, r.jsa.js.srv
	mset.readLinearizable(func(err error, wake map[*client]struct{}) {
		var resp *msgGetResponse
		switch {
		case err == nil:
			resp = mset.msgGet(req)
		case local:
			resp = &msgGetResponse{apiResponse: apiResponse{Error: errClusterNotAvail()}}
		default:
			return
		}
		resp.Type = apiTypePrefix + "stream_msg_get_response"
		b, _ := json.Marshal(resp)
		s.deliverBatch(wake, acc, reply, "", nil, b)
	})
}
