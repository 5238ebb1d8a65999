package server

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/nats-io/nats-server/v2/internal/raft"
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
	case subj == "META.LEADER.STEPDOWN":
		resp = js.sysMetaStepdown(local)
	case local:
		resp = &apiResponse{Type: apiTypePrefix + "error_response", Error: errNotImplemented("$JS.API." + subj)}
	}
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

// sysMetaStepdown has the meta leader hand its leadership over.
func (js *jetStream) sysMetaStepdown(local bool) any {
	jc := js.cluster
	resp := &successResponse{apiResponse: apiResponse{Type: apiTypePrefix + "meta_leader_stepdown_response"}}
	switch {
	case jc.isMetaLeader():
		jc.mu.Lock()
		g := jc.meta
		jc.mu.Unlock()
		if g == nil {
			resp.Error = errClusterNotAvail()
			break
		}
		switch err := transferLeadership(g); {
		case errors.Is(err, raft.ErrNotLeader):
			return nil // demoted since: the new meta leader answers
		case err != nil:
			resp.Error = errClusterNotAvail()
		default:
			resp.Success = true
		}
	case local && !jc.metaLeaderKnown():
		resp.Error = errClusterNotAvail()
	default:
		return nil
	}
	return resp
}
