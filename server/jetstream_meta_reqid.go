package server

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// Request ids of meta entries. A meta entry proposed for a client's
// request carries an id (metaEntry.ID) that every copy of that request
// shares (jetstream_meta_copy.go): a hash of the account, the client's
// reply subject, the API subject and the body. The meta state keeps the
// ids of the last metaReqsKept entries applied with one, and their
// outcomes (jsCluster.reqs): an entry whose id is there is not applied
// again, on any server, and its caller gets the outcome the first apply
// earned. The table changes only at apply, in log order, and travels in
// the meta snapshot, so every server skips the same entries.
//
// Only a copy (metaEntry.Copy) is skipped: a committed original always
// precedes its copies in the log (a copy is proposed by a later leader,
// whose log holds the original if it can still commit), and an original
// that repeats an earlier request's id (a client reusing a fixed reply
// subject and body: create, delete, create again) is a new request. A
// copy is taken as one only within metaReqWindow of the applied entry's
// timestamp (both in the log: deterministic).

// metaReqsKept bounds the table by count.
const metaReqsKept = 4096

// metaReqWindow: a copy stamped further from its id's applied entry (by
// the proposing leaders' clocks) is not its copy. Copies go out within
// metaHoldFor (4 s) of the original; the rest is room for the leaders'
// clocks to differ.
const metaReqWindow = 30 * time.Second

// routeProtoMetaIDs: a server of this route protocol applies request ids
// (route.go). Copies of held writes go out only while every connected
// meta peer speaks it; an older server would apply a copy twice.
const routeProtoMetaIDs = 9

// metaReqRec is one applied request: its id, its entry's timestamp and
// the error it was answered with (nil: success).
type metaReqRec struct {
	ID  string    `json:"id"`
	At  int64     `json:"at"`
	Err *ApiError `json:"err,omitempty"`
}

// metaReqs is the table of applied request ids (under jsCluster.mu).
type metaReqs struct {
	order []string // oldest first, each id once
	byID  map[string]metaReqRec
}

// find is the record of id if an entry of that id stamped at would be its
// duplicate.
func (t *metaReqs) find(id string, at int64) (metaReqRec, bool) {
	rec, ok := t.byID[id]
	if !ok {
		return rec, false
	}
	d := at - rec.At
	return rec, d <= int64(metaReqWindow) && d >= -int64(metaReqWindow)
}

// record notes an applied request, forgetting the oldest beyond
// metaReqsKept.
func (t *metaReqs) record(rec metaReqRec) {
	if t.byID == nil {
		t.byID = map[string]metaReqRec{}
	}
	if _, ok := t.byID[rec.ID]; ok { // the same id again after the window
		t.order = slices.DeleteFunc(t.order, func(id string) bool { return id == rec.ID })
	}
	t.byID[rec.ID] = rec
	t.order = append(t.order, rec.ID)
	if len(t.order) > metaReqsKept {
		delete(t.byID, t.order[0])
		t.order = t.order[1:]
	}
}

// list is the table oldest first (for a snapshot).
func (t *metaReqs) list() []metaReqRec {
	out := make([]metaReqRec, 0, len(t.order))
	for _, id := range t.order {
		out = append(out, t.byID[id])
	}
	return out
}

// restore replaces the table with a snapshot's list (none in a snapshot
// of an older version: an empty table).
func (t *metaReqs) restore(list []metaReqRec) {
	*t = metaReqs{}
	for _, rec := range list {
		t.record(rec)
	}
}

// metaReqID is the id of a request of account sent with reply to the API
// subject (without $JS.API.) with body.
func metaReqID(account, reply, subject string, body []byte) string {
	h := sha256.New()
	for _, s := range []string{account, reply, subject} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	h.Write(body)
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:18])
}

// requestID is the id r's meta entry carries: a copy's was set from the
// original's reply subject; an original's comes from its own. None while
// a meta peer is older (it would not skip duplicates). It is computed
// once per request: a write from a client of the meta leader asks for it
// to check for a repeat and again to propose, a held one to check and to
// hold, and both must agree (the gate may change in between).
func (r *apiRequest) requestID() string {
	if r.metaID != "" {
		return r.metaID
	}
	if !r.reqIDSet {
		r.reqID, r.reqIDSet = r.computeRequestID(), true
	}
	return r.reqID
}

// testHookRequestID is told of every request id computed for an original.
var testHookRequestID func(s *Server)

func (r *apiRequest) computeRequestID() string {
	if testHookRequestID != nil {
		testHookRequestID(r.jsa.js.srv)
	}
	if r.reply == "" || !r.jsa.js.cluster.metaIDsSupported() {
		return ""
	}
	return metaReqID(r.jsa.acc.Name, r.reply, r.subject, r.body)
}

// metaIDsSupported reports whether every meta peer applies request ids:
// each advertised route protocol 9 or later when it last connected (in
// this run, or an earlier one: jetstream_meta_protos.go). A peer never
// heard, or older when last heard, counts as older even while its route
// is down: it would apply a copy that the others skip when it catches up.
func (jc *jsCluster) metaIDsSupported() bool {
	if own := jc.js.srv.getOpts().routeProto; own != 0 && own < routeProtoMetaIDs {
		return false // a test's stand-in for an older server
	}
	jc.mu.Lock()
	peers := slices.Clone(jc.peers)
	jc.mu.Unlock()
	for _, p := range peers {
		if v := jc.metaPeerProto(p); v < routeProtoMetaIDs {
			return false
		}
	}
	return true
}

// newMetaEntry is the entry of r's meta call op on sa.
func (r *apiRequest) newMetaEntry(op string, sa *streamAssignment) *metaEntry {
	s := r.jsa.js.srv
	me := &metaEntry{Op: op, SA: sa, Origin: s.Name(), Reply: strings.Clone(r.reply), ID: r.requestID(), Copy: r.metaID != ""}
	if me.ID != "" {
		me.At = s.clock.Now().UnixNano()
	}
	return me
}

// appliedReq reports whether the entry me duplicates an applied request,
// answering its caller (here) with the first outcome if so.
func (jc *jsCluster) appliedReq(me *metaEntry) bool {
	if me.ID == "" || !me.Copy {
		return false
	}
	jc.mu.Lock()
	rec, dup := jc.reqs.find(me.ID, me.At)
	jc.mu.Unlock()
	if !dup {
		return false
	}
	if me.Origin == jc.js.srv.Name() && me.Reply != "" {
		go jc.respondRecorded(me.Op, me.Reply, rec.Err, me.SA)
	}
	return true
}

// recordReqLocked notes me's outcome if it carries an id.
func (jc *jsCluster) recordReqLocked(me *metaEntry, outcome *ApiError) {
	if me.ID != "" {
		jc.reqs.record(metaReqRec{ID: me.ID, At: me.At, Err: outcome})
	}
}

// respondRecorded answers reply with a recorded outcome of meta call op
// on the stream req names: the error, or success with the stream's
// current info (req's own configuration if it is gone since).
func (jc *jsCluster) respondRecorded(op, reply string, e *ApiError, req *streamAssignment) {
	s := jc.js.srv
	jsa := jc.js.account(req.Account)
	if jsa == nil {
		return
	}
	typ := "stream_create_response"
	if op == "upd" {
		typ = "stream_update_response"
	}
	var resp any
	switch {
	case op == "del":
		resp = &successResponse{apiResponse: apiResponse{Type: apiTypePrefix + "stream_delete_response", Error: e}, Success: e == nil}
	case e != nil:
		resp = streamErrTyped(e, typ)
	default:
		var si *StreamInfo
		if sa := jc.assignment(req.Account, req.Config.Name); sa != nil {
			jc.leaders.wait(s.clock, leaderKey(sa.Account, sa.Config.Name), s.clock.Now().Add(5*time.Second), s.done)
			si = jc.streamInfoFromAssignment(sa)
			// A replica takes an update from the stream's log a moment
			// after the meta apply: the answer shows what was accepted.
			si.Config = sa.Config
		} else {
			si = &StreamInfo{Config: req.Config, Created: req.Created, TimeStamp: s.clock.Now().UTC(), State: StreamState{FirstSeq: 1}}
		}
		resp = &streamInfoResponse{apiResponse: apiResponse{Type: apiTypePrefix + typ}, StreamInfo: si, DidCreate: op == "add"}
	}
	b, _ := json.Marshal(resp)
	s.deliver(nil, jsa.acc, reply, "", nil, b)
}

// reqList is the request table oldest first, for a snapshot.
func (jc *jsCluster) reqList() []metaReqRec {
	jc.mu.Lock()
	defer jc.mu.Unlock()
	return jc.reqs.list()
}

// restoreReqs replaces the request table with a snapshot's.
func (jc *jsCluster) restoreReqs(list []metaReqRec) {
	jc.mu.Lock()
	defer jc.mu.Unlock()
	jc.reqs.restore(list)
}
