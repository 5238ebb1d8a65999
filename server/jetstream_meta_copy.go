package server

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Copies of held meta writes (jetstream_meta_hold.go). A copy of a
// stream create, update or delete must carry its original's request id
// (jetstream_meta_reqid.go), and no client may set one: a client naming
// another's reply subject could make that request look applied. So the
// copy does not go to $JS.API with a header (any client of the account
// can publish there, and the request reaches the meta leader over a route
// whatever server it entered by); it goes to metaCopySubject in the system
// account, where only servers (and system users) publish, with the
// account, the call and the original reply subject in its body. The meta
// leader runs the call as if it came from the account, its answer going
// to the holding server's inbox in the account.

const metaCopySubject = "$JSC.MCOPY"

// metaCopy is a held write sent again.
type metaCopy struct {
	Account string `json:"account"`
	Subject string `json:"subject"` // without $JS.API.
	Orig    string `json:"orig"`    // the client's reply subject
	Reply   string `json:"reply"`   // the holding server's inbox
	Hdr     []byte `json:"hdr,omitempty"`
	Body    []byte `json:"body,omitempty"`
}

// heldWrite reports whether a held call of this prefix changes the meta
// state (its copy goes through metaCopySubject).
func heldWrite(prefix string) bool {
	switch prefix {
	case "STREAM.CREATE.", "STREAM.UPDATE.", "STREAM.DELETE.":
		return true
	}
	return false
}

// sendMetaCopy sends r again as a copy answered on inbox.
func (r *apiRequest) sendMetaCopy(inbox string) {
	s := r.jsa.js.srv
	sys := s.SystemAccount()
	if sys == nil {
		return
	}
	b, err := json.Marshal(&metaCopy{Account: r.jsa.acc.Name, Subject: r.subject, Orig: r.reply, Reply: inbox, Hdr: r.hdr, Body: r.body})
	if err != nil {
		return
	}
	s.deliver(nil, sys, metaCopySubject, "", nil, b)
}

// metaCopied runs a copy on the meta leader (the others ignore it; the
// holding server sends another to the next leader). Only the cluster's
// own copies run: c tells where it came from (cluster_only.go).
func (jc *jsCluster) metaCopied(_ *subscription, c *client, _ *Account, _, _ string, _, msg []byte) {
	if !jc.isMetaLeader() || !jc.copyFromCluster(c) {
		return
	}
	var mc metaCopy
	if json.Unmarshal(msg, &mc) != nil || mc.Orig == "" || mc.Reply == "" {
		return
	}
	jsa := jc.js.account(mc.Account)
	if jsa == nil {
		return
	}
	r := &apiRequest{jsa: jsa, subject: mc.Subject, reply: mc.Reply, hdr: mc.Hdr, body: mc.Body,
		metaID: metaReqID(mc.Account, mc.Orig, mc.Subject, mc.Body)}
	for _, route := range clusterRoutes {
		if !route.meta || !heldWrite(route.prefix) || !strings.HasPrefix(r.subject, route.prefix) {
			continue
		}
		if r.answerApplied(route.prefix) {
			return
		}
		if !jc.metaIDsSupported() {
			// An older peer connected since the copy's server held the
			// write: it would apply the copy's entry even where its id
			// was applied. The client times out, as with nats-server.
			jc.js.srv.olderCopyNotRun("a meta peer older than route protocol 9 is connected, which would apply it again")
			return
		}
		defer r.recoverPanic()
		if resp := route.handler(r); resp != nil {
			r.respond(nil, route.typ, resp)
		}
		return
	}
}

// answerApplied answers a copy whose original was applied already with
// the outcome it earned, before the call's checks read a state the
// original changed (a delete's copy would find no stream). One still in
// flight is proposed and skipped at apply (jsCluster.appliedReq).
func (r *apiRequest) answerApplied(prefix string) bool {
	jc := r.jsa.js.cluster
	jc.mu.Lock()
	rec, ok := jc.reqs.find(r.metaID, jc.js.srv.clock.Now().UnixNano())
	jc.mu.Unlock()
	if !ok {
		return false
	}
	op := map[string]string{"STREAM.CREATE.": "add", "STREAM.UPDATE.": "upd", "STREAM.DELETE.": "del"}[prefix]
	req := &streamAssignment{Account: r.jsa.acc.Name}
	_ = json.Unmarshal(r.body, &req.Config)
	req.Config.Name = r.streamName(prefix)
	go jc.respondRecorded(op, r.reply, rec.Err, req)
	return true
}

// copyFromCluster reports whether a copy that came by c (nil: published
// by this server) is the cluster's own: this server's, or routed from a
// meta peer that keeps its clients off metaCopySubject; it counts and
// logs one that is not.
//
// A meta peer older than routeProtoClusterOnly (a rolling upgrade from
// route protocol 9) sends its held writes' copies too, but it relays its
// clients' publishes there as well (any system user's, an import's), and
// both come over its route as the same message: nothing tells a genuine
// copy from a forged one, which would create or delete streams of any
// account. So its copies are not run; its held write's client times out,
// as before held writes (and with nats-server), and the write itself is
// applied or not as its original was. It is logged as what it is, an
// upgrade in progress. This server's own held writes go on while such a
// peer is connected: a leader of route protocol 9 runs their copies (it
// runs any), one of 10 takes them from this server's route.
func (jc *jsCluster) copyFromCluster(c *client) bool {
	s := jc.js.srv
	switch {
	case c == nil:
		return true
	case c.route == nil: // a client's publish (refused before it got here)
		s.refuseClusterOnly(c.String(), metaCopySubject)
		return false
	}
	rem := &c.route.remote
	jc.mu.Lock()
	peer := slices.Contains(jc.peers, rem.Name)
	jc.mu.Unlock()
	switch {
	case !peer:
		s.refuseClusterOnly(fmt.Sprintf("the route of %s (not a meta peer)", rem.Name), metaCopySubject)
	case rem.Proto < routeProtoClusterOnly:
		s.clusterOnly.refused.Add(1)
		s.olderCopyNotRun(fmt.Sprintf("it came from meta peer %s, of route protocol %d: a server older than %d relays its clients' publishes on %s, "+
			"so its copies cannot be told from a client's (upgrade it)", rem.Name, rem.Proto, routeProtoClusterOnly, metaCopySubject))
	default:
		return true
	}
	return false
}
