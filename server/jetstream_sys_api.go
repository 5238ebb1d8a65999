package server

import (
	"encoding/json"
	"strings"
)

// The JetStream API calls that act on the cluster rather than on one
// account's streams (meta leader stepdown, server removal and evacuation,
// meta rescue, account purge) are answered only for the system account, as
// nats-server does: a request from any other account gets no answer, so no
// tenant can force meta elections or remove servers.
var sysOnlyAPIs = []string{"META.LEADER.STEPDOWN", "META.RESCUE", "SERVER.REMOVE", "SERVER.EVACUATE", "ACCOUNT.PURGE."}

// isSysOnlyAPI reports whether subject (without "$JS.API.") is one of them.
func isSysOnlyAPI(subject string) bool {
	for _, p := range sysOnlyAPIs {
		if matchesRoute(subject, p) {
			return true
		}
	}
	return false
}

// subscribeSysAPI answers the system-only calls in the system account of a
// clustered server (a single server leaves them unanswered, as nats-server).
func (js *jetStream) subscribeSysAPI() error {
	sys := js.srv.SystemAccount()
	if sys == nil {
		return nil
	}
	for _, p := range sysOnlyAPIs {
		subj := jsAPIPrefix + p
		if strings.HasSuffix(p, ".") {
			subj += "*"
		}
		if _, err := sys.subscribeInternal(subj, "", js.sysAPIRequest); err != nil {
			return err
		}
	}
	return nil
}

// sysAPIRequest answers a system-only call made in the system account: the
// meta leader steps down; the others are not implemented, which the server
// the client is connected to says.
func (js *jetStream) sysAPIRequest(_ *subscription, c *client, acc *Account, subject, reply string, _, _ []byte) {
	if reply == "" {
		return
	}
	local := c != nil && c.route == nil
	var resp any
	switch subj := strings.TrimPrefix(subject, jsAPIPrefix); {
	case subj == "META.LEADER.STEPDOWN" && js.cluster.isMetaLeader():
		// It waits for the transfer's outcome (jetstream_stepdown.go).
		reply = strings.Clone(reply)
		if js.srv.runAside(func() { js.metaStepdownAside(acc, reply, local) }) {
			return
		}
		resp = metaStepdownResponse(&successResponse{apiResponse: apiResponse{Error: errClusterNotAvail()}})
	case subj == "META.LEADER.STEPDOWN":
		resp = js.sysMetaStepdown(local)
	case local:
		resp = &apiResponse{Type: apiTypePrefix + "error_response", Error: errNotImplemented("$JS.API." + subj)}
	}
	js.sysAnswer(c, acc, reply, resp)
}

// metaStepdownAside answers a meta stepdown off the read loop that
// brought it; a panic is answered with a 500 error, as on a read loop.
func (js *jetStream) metaStepdownAside(acc *Account, reply string, local bool) {
	defer func() {
		if v := recover(); v != nil {
			js.srv.recovered("$JS.API META.LEADER.STEPDOWN", v)
			e := &ApiError{Code: 500, Description: internalErrorText}
			js.sysAnswer(nil, acc, reply, metaStepdownResponse(&successResponse{apiResponse: apiResponse{Error: e}}))
		}
	}()
	js.sysAnswer(nil, acc, reply, js.sysMetaStepdown(local))
}

// sysAnswer delivers resp (nil: no answer) to reply; c is the client whose
// read loop runs this, or nil.
func (js *jetStream) sysAnswer(c *client, acc *Account, reply string, resp any) {
	if resp == nil {
		return
	}
	js.apiTotal.Add(1)
	if hasAPIError(resp) {
		js.apiErrs.Add(1)
	}
	b, _ := json.Marshal(resp)
	js.srv.deliver(c, acc, reply, "", nil, b)
}

// sysMetaStepdown has the meta leader hand its leadership over, and
// answers with the outcome (stepdownAnswer; nil: no answer).
func (js *jetStream) sysMetaStepdown(local bool) any {
	jc := js.cluster
	switch {
	case jc.isMetaLeader():
		jc.mu.Lock()
		g := jc.meta
		jc.mu.Unlock()
		if g == nil {
			return metaStepdownResponse(&successResponse{apiResponse: apiResponse{Error: errClusterNotAvail()}})
		}
		return metaStepdownResponse(stepdownAnswer(transferLeadership(g)))
	case local && !jc.metaLeaderKnown() && !jc.metaDeposed():
		// A deposed server leaves it to the new leader, unknown here, which
		// hears it too (jetstream_meta_wedge.go): a 10008 first would say
		// "not done" for a stepdown done.
		return metaStepdownResponse(&successResponse{apiResponse: apiResponse{Error: errClusterNotAvail()}})
	}
	return nil
}

// metaStepdownResponse types a stepdown answer as a meta one (nil stays
// nil).
func metaStepdownResponse(resp any) any {
	sr, ok := resp.(*successResponse)
	if !ok {
		return nil
	}
	sr.Type = apiTypePrefix + "meta_leader_stepdown_response"
	return sr
}
