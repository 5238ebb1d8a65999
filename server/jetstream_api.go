package server

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
)

const jsAPIPrefix = "$JS.API."

// apiResponse is the part every API response shares.
type apiResponse struct {
	Type  string    `json:"type"`
	Error *ApiError `json:"error,omitempty"`
}

// apiPaged is the paging part of list responses.
type apiPaged struct {
	Total  int `json:"total"`
	Offset int `json:"offset"`
	Limit  int `json:"limit"`
}

const (
	apiTypePrefix   = "io.nats.jetstream.api.v1."
	jsNamesLimit    = 1024
	jsListLimit     = 256
	jsSubjectsLimit = 100000
)

// apiRequest is one API call being answered.
type apiRequest struct {
	jsa     *jsAccount
	c       *client
	subject string // with the $JS.API. prefix removed
	reply   string
	hdr     []byte
	body    []byte
	// metaID is the request id of a held write's copy: its original's
	// (jetstream_meta_copy.go).
	metaID string
	// reqID is an original's request id once computed (reqIDSet): the
	// hold's check and the proposal use the one computed first
	// (jetstream_meta_reqid.go requestID).
	reqID    string
	reqIDSet bool
}

// detached is a copy of r that owns its subject, reply, header and body:
// r's may point into the read buffer of the connection that brought the
// call, which the next read overwrites. A call answered later, on another
// goroutine, works on it.
func (r *apiRequest) detached() *apiRequest {
	cp := *r
	cp.reply, cp.subject = strings.Clone(r.reply), strings.Clone(r.subject)
	cp.hdr, cp.body = slices.Clone(r.hdr), slices.Clone(r.body)
	return &cp
}

type apiHandler func(r *apiRequest) any

// apiRoutes maps the leading tokens of an API subject to its handler and
// response type; "*" marks where the stream name goes.
var apiRoutes = []struct {
	prefix  string
	typ     string
	handler apiHandler
}{
	{"INFO", "account_info_response", (*apiRequest).accountInfo},
	{"STREAM.CREATE.", "stream_create_response", (*apiRequest).streamCreate},
	{"STREAM.UPDATE.", "stream_update_response", (*apiRequest).streamUpdate},
	{"STREAM.INFO.", "stream_info_response", (*apiRequest).streamInfo},
	{"STREAM.DELETE.", "stream_delete_response", (*apiRequest).streamDelete},
	{"STREAM.NAMES", "stream_names_response", (*apiRequest).streamNames},
	{"STREAM.LIST", "stream_list_response", (*apiRequest).streamList},
	{"STREAM.PURGE.", "stream_purge_response", (*apiRequest).streamPurge},
	{"STREAM.MSG.GET.", "stream_msg_get_response", (*apiRequest).streamMsgGet},
	{"STREAM.MSG.DELETE.", "stream_msg_delete_response", (*apiRequest).streamMsgDelete},
	{"CONSUMER.CREATE.", consumerCreateResponseType, (*apiRequest).consumerCreate},
	{"CONSUMER.DURABLE.CREATE.", consumerCreateResponseType, (*apiRequest).consumerCreate},
	{"CONSUMER.INFO.", consumerInfoResponseType, (*apiRequest).consumerInfo},
	{"CONSUMER.DELETE.", consumerDeleteResponseType, (*apiRequest).consumerDelete},
	{"CONSUMER.PAUSE.", consumerPauseResponseType, (*apiRequest).consumerPause},
	{"CONSUMER.UNPIN.", consumerUnpinResponseType, (*apiRequest).consumerUnpin},
	{"CONSUMER.NAMES.", consumerNamesResponseType, (*apiRequest).consumerNames},
	{"CONSUMER.LIST.", consumerListResponseType, (*apiRequest).consumerList},
}

// subscribeAPI answers $JS.API requests in the account. DIRECT.GET is left
// to the streams that allow it, so a direct get nobody serves gets the
// no-responders status, as with nats-server.
func (jsa *jsAccount) subscribeAPI() error {
	subjects := []string{"$JS.API.INFO", "$JS.API.STREAM.>", "$JS.API.CONSUMER.>", "$JS.API.META.>", "$JS.API.ACCOUNT.>"}
	if d := jsa.js.srv.getOpts().JetStreamDomain; d != "" {
		subjects = append(subjects, "$JS."+d+".API.>")
	}
	for _, subj := range subjects {
		sub, err := jsa.acc.subscribeInternalAfterRoutes(subj, jsa.apiRequest)
		if err != nil {
			return err
		}
		jsa.apiSubs = append(jsa.apiSubs, sub)
	}
	return nil
}

func (jsa *jsAccount) apiRequest(_ *subscription, c *client, _ *Account, subject, reply string, hdr, msg []byte) {
	if reply == "" {
		return
	}
	js := jsa.js
	subject = strings.Clone(subject)
	if d := js.srv.getOpts().JetStreamDomain; d != "" && strings.HasPrefix(subject, "$JS."+d+".API.") {
		subject = jsAPIPrefix + strings.TrimPrefix(subject, "$JS."+d+".API.")
	}
	r := &apiRequest{jsa: jsa, c: c, subject: strings.TrimPrefix(subject, jsAPIPrefix), reply: reply, hdr: hdr, body: msg}
	if js.cluster != nil && strings.HasPrefix(r.subject, "CONSUMER.MSG.NEXT.") {
		return // the stream's leader listens for its consumers' pull requests (consumer_cluster_api.go)
	}
	if js.cluster == nil && r.consumerNext() {
		return // a pull request: the consumer answers, and it is no API call (nats-server counts none)
	}
	js.apiTotal.Add(1)
	defer r.recoverPanic()
	if isSysOnlyAPI(r.subject) {
		if jsa.acc != js.srv.SystemAccount() {
			js.srv.Debugf("JetStream API request %q from non-system account %q ignored", subject, jsa.acc.Name)
		}
		return // answered in the system account only (jetstream_sys_api.go)
	}
	var typ string
	var resp any
	if js.cluster != nil {
		var answer bool
		if typ, resp, answer = r.clusteredDispatch(); !answer || resp == nil {
			return // another server answers, or the apply will
		}
		if ul, ok := resp.(*unavailableLater); ok {
			r.answerUnavailableLater(typ, ul)
			return
		}
		if h, ok := resp.(*metaHold); ok {
			r.holdMeta(h)
			return
		}
	} else {
		typ, resp = r.dispatch()
	}
	r.respond(c, typ, resp)
}

// respond delivers resp, of response type typ, to r's reply; c is the
// client whose read loop runs this (nil off a read loop).
func (r *apiRequest) respond(c *client, typ string, resp any) {
	js := r.jsa.js
	setResponseType(resp, apiTypePrefix+typ)
	b, err := json.Marshal(resp)
	if err != nil {
		b, _ = json.Marshal(&apiResponse{Type: apiTypePrefix + typ, Error: errStreamGeneral(err)})
	}
	if hasAPIError(resp) {
		js.apiErrs.Add(1)
	}
	js.srv.deliver(c, r.jsa.acc, r.reply, "", nil, b)
}

// recoverPanic answers a request whose handler panicked with a 500 error
// of the request's response type, and counts it as an API error.
func (r *apiRequest) recoverPanic() {
	v := recover()
	if v == nil {
		return
	}
	js := r.jsa.js
	typ := apiResponseType(r.subject)
	js.srv.recovered("$JS.API "+typ, v)
	js.apiErrs.Add(1)
	b, _ := json.Marshal(&apiResponse{Type: apiTypePrefix + typ, Error: &ApiError{Code: 500, Description: internalErrorText}})
	js.srv.deliver(nil, r.jsa.acc, r.reply, "", nil, b)
}

// apiResponseType is the response type of the API call subject (without
// the $JS.API. prefix) names.
func apiResponseType(subject string) string {
	for _, route := range clusterRoutes {
		if matchesRoute(subject, route.prefix) {
			return route.typ
		}
	}
	for _, route := range apiRoutes {
		if matchesRoute(subject, route.prefix) {
			return route.typ
		}
	}
	return "error_response"
}

func hasAPIError(resp any) bool {
	type errored interface{ apiError() *ApiError }
	if e, ok := resp.(errored); ok {
		return e.apiError() != nil
	}
	return false
}

func (r *apiResponse) apiError() *ApiError { return r.Error }

func (r *apiRequest) dispatch() (string, any) {
	for _, route := range apiRoutes {
		exact := !strings.HasSuffix(route.prefix, ".")
		if (exact && r.subject != route.prefix) || (!exact && !strings.HasPrefix(r.subject, route.prefix)) {
			continue
		}
		if lvl := getHeader(JSRequiredApiLevel, r.hdr); lvl != nil {
			if n, err := strconv.Atoi(string(lvl)); err != nil || n > JetStreamAPILevel {
				return route.typ, &apiResponse{Type: apiTypePrefix + route.typ, Error: errRequiredAPILevel()}
			}
		}
		resp := route.handler(r)
		setResponseType(resp, apiTypePrefix+route.typ)
		return route.typ, resp
	}
	if strings.HasPrefix(r.subject, "CONSUMER.") {
		return "consumer_create_response", &apiResponse{Type: apiTypePrefix + "consumer_create_response", Error: errNotImplemented("consumers")}
	}
	return "error_response", &apiResponse{Type: apiTypePrefix + "error_response", Error: errBadRequest()}
}

func setResponseType(resp any, typ string) {
	type typed interface{ setType(string) }
	if t, ok := resp.(typed); ok {
		t.setType(typ)
	}
}

func (r *apiResponse) setType(t string) { r.Type = t }

// streamName returns the token after the route prefix (the stream name).
func (r *apiRequest) streamName(prefix string) string {
	return strings.TrimPrefix(r.subject, prefix)
}

// unmarshal decodes an optional JSON body.
func (r *apiRequest) unmarshal(v any) *ApiError {
	if len(r.body) == 0 {
		return nil
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		return errInvalidJSON(err)
	}
	return nil
}

// JetStreamAccountStats is the $JS.API.INFO response body.
type JetStreamAccountStats struct {
	Memory    uint64                 `json:"memory"`
	Store     uint64                 `json:"storage"`
	ReservedM uint64                 `json:"reserved_memory"`
	ReservedS uint64                 `json:"reserved_storage"`
	Streams   int                    `json:"streams"`
	Consumers int                    `json:"consumers"`
	Limits    JetStreamAccountLimits `json:"limits"`
	Domain    string                 `json:"domain,omitempty"`
	API       JetStreamAPIStats      `json:"api"`
}

// JetStreamAccountLimits are the account's limits (-1 = unlimited).
type JetStreamAccountLimits struct {
	MaxMemory            int64 `json:"max_memory"`
	MaxStore             int64 `json:"max_storage"`
	MaxStreams           int   `json:"max_streams"`
	MaxConsumers         int   `json:"max_consumers"`
	MaxAckPending        int   `json:"max_ack_pending"`
	MemoryMaxStreamBytes int64 `json:"memory_max_stream_bytes"`
	StoreMaxStreamBytes  int64 `json:"storage_max_stream_bytes"`
	MaxBytesRequired     bool  `json:"max_bytes_required"`
}

// JetStreamAPIStats reports the API level and call counts.
type JetStreamAPIStats struct {
	Level  int    `json:"level"`
	Total  uint64 `json:"total"`
	Errors uint64 `json:"errors"`
}

func (js *jetStream) apiStats() JetStreamAPIStats {
	return JetStreamAPIStats{Level: JetStreamAPILevel, Total: uint64(js.apiTotal.Load()), Errors: uint64(js.apiErrs.Load())}
}

type accountInfoResponse struct {
	apiResponse
	*JetStreamAccountStats
}

func (r *apiRequest) accountInfo() any {
	js := r.jsa.js
	l := r.jsa.limits()
	st := &JetStreamAccountStats{Domain: js.srv.getOpts().JetStreamDomain,
		Limits: JetStreamAccountLimits{MaxMemory: l.MaxMemory, MaxStore: l.MaxStore, MaxStreams: l.MaxStreams, MaxConsumers: l.MaxConsumers,
			MaxAckPending: l.MaxAckPending, MemoryMaxStreamBytes: -1, StoreMaxStreamBytes: -1},
		API: js.apiStats()}
	for _, mset := range r.jsa.streamList() {
		var ss StreamState
		mset.st().FastState(&ss)
		if mset.config().Storage == MemoryStorage {
			st.Memory += ss.Bytes
		} else {
			st.Store += ss.Bytes
		}
		st.Streams++
		st.Consumers += mset.numConsumers()
	}
	return &accountInfoResponse{JetStreamAccountStats: st}
}

// ClusterInfo is the cluster section of StreamInfo.
type ClusterInfo struct {
	Name     string      `json:"name,omitempty"`
	Leader   string      `json:"leader,omitempty"`
	Replicas []*PeerInfo `json:"replicas,omitempty"`
}

// PeerInfo describes one replica as the leader sees it.
type PeerInfo struct {
	Name    string        `json:"name"`
	Current bool          `json:"current"`
	Offline bool          `json:"offline,omitempty"`
	Active  time.Duration `json:"active"`
	Lag     uint64        `json:"lag,omitempty"`
}

// StreamInfo describes a stream.
type StreamInfo struct {
	Config    StreamConfig `json:"config"`
	Created   time.Time    `json:"created"`
	State     StreamState  `json:"state"`
	Cluster   *ClusterInfo `json:"cluster,omitempty"`
	TimeStamp time.Time    `json:"ts"`
}
