package server

import (
	"strings"

	cstate "github.com/nats-io/nats-server/v2/internal/consumer"
)

// The $JS.API.CONSUMER.* handlers. On a replicated stream they run on
// the stream's leader (clusterRoutes), and a create, update or delete is
// proposed to the stream's log (consumer_cluster_api.go).

func consumerErr(e *ApiError) *apiResponse { return &apiResponse{Error: e} }

// consumerStream finds the stream a consumer call names.
func (r *apiRequest) consumerStream(name string) (*stream, *ApiError) {
	mset := r.jsa.lookup(name)
	if mset == nil {
		return nil, errStreamNotFound()
	}
	return mset, nil
}

// twoTokens splits "<stream>.<consumer>" after prefix.
func (r *apiRequest) twoTokens(prefix string) (string, string, bool) {
	s, c, ok := strings.Cut(strings.TrimPrefix(r.subject, prefix), ".")
	return s, c, ok && s != "" && c != "" && !strings.Contains(c, ".")
}

func (r *apiRequest) consumerCreate() any {
	req, ok, e := decodeConsumerCreate(r.subject, r.body, true)
	if !ok {
		return consumerErr(errBadRequest())
	}
	if e != nil {
		return consumerErr(e)
	}
	mset, e := r.consumerStream(req.Stream)
	if e != nil {
		return consumerErr(e)
	}
	if mset.replicated && !mset.createsLocal(&req.Config) {
		return r.proposeConsumerCreate(mset, req)
	}
	ci, e := mset.createConsumer(req, r.consumerLimits())
	if e != nil {
		return consumerErr(e)
	}
	if mset.replicated {
		ci.Cluster = mset.clusterInfo()
	}
	mset.ensureAckSub()
	if req.Config.DeliverSubject != "" {
		mset.ensureFCSub()
	}
	go mset.flushConsumerNamed(ci.Name) // after the answer, as nats-server (the created advisory too)
	return &JSApiConsumerCreateResponse{ConsumerInfo: ci}
}

func (r *apiRequest) consumerLimits() consumerLimits {
	l := r.jsa.limits()
	return consumerLimits{Server: r.jsa.js.srv.getOpts().JetStreamLimits,
		Account: JetStreamAccountLimits{MaxConsumers: l.MaxConsumers, MaxAckPending: l.MaxAckPending}}
}

// createConsumer decides and applies a create or update under the
// stream's lock, so nothing changes between the decision and the apply.
func (mset *stream) createConsumer(req *CreateConsumerRequest, lim consumerLimits) (*ConsumerInfo, *ApiError) {
	mset.mu.Lock()
	defer mset.mu.Unlock()
	if mset.closed {
		return nil, errStreamNotFound()
	}
	scfg := mset.cfg
	st := &consumerCreateState{Stream: &scfg, Limits: lim}
	want := consumerNameOf(&req.Config)
	for n, o := range mset.consumers {
		if n == want {
			st.Existing = o.cfg
		} else {
			st.Others = append(st.Others, o.cfg)
		}
	}
	if mset.replicated && !mset.leader { // a local consumer (consumer_local.go) lives on the leader
		return nil, errClusterNotAvail()
	}
	cfg, name, e := decideConsumerCreate(st, req)
	if e != nil {
		return nil, e
	}
	if o := mset.consumers[name]; o != nil {
		if o.viaLog() {
			return nil, errConsumerAlreadyExists()
		}
		ci, e := o.updateLocked(cfg)
		if e == nil {
			o.pausedAdvisoryLocked()
		}
		return ci, e
	}
	o := &consumer{mset: mset, name: name, cfg: cfg, created: mset.jsa.js.srv.clock.Now().UTC(), local: mset.replicated}
	o.initLastPerSubjectLocked() // before the create: its start is the list's first
	out := o.applyLocked(&cstate.Entry{Op: cstate.OpCreate, Gen: 1, TS: o.created.UnixNano(), Config: stateConfig(cfg)})
	if out.Err != nil {
		return nil, errConsumerCreate(out.Err.Error())
	}
	if err := o.saveMetaLocked(); err != nil {
		return nil, errConsumerCreate(err.Error())
	}
	mset.addConsumerLocked(o)
	o.startLocked()
	o.armPauseLocked()
	o.pausedAdvisoryLocked()
	ci := o.infoLocked()
	o.queueOutLocked(o.pumpLocked(nil))
	return ci, nil
}

// updateLocked applies an update (or an identical create) to o.
func (o *consumer) updateLocked(cfg *ConsumerConfig) (*ConsumerInfo, *ApiError) {
	out := o.applyLocked(&cstate.Entry{Op: cstate.OpUpdate, Gen: o.state.Gen() + 1, TS: o.now().UnixNano(), Config: stateConfig(cfg)})
	if out.Err != nil {
		return nil, errConsumerCreate(out.Err.Error())
	}
	o.cfg = cfg
	o.updatePushLocked()
	if err := o.saveMetaLocked(); err != nil {
		return nil, errConsumerCreate(err.Error())
	}
	// What the new config lets through now (a larger max_ack_pending, say)
	// goes at once, as nats-server signals its delivery loop on an update;
	// sent after the answer (flushConsumerNamed), which shows the state
	// before them, as a create's does.
	ci := o.infoLocked()
	o.queueOutLocked(o.pumpLocked(nil))
	return ci, nil
}

func (r *apiRequest) consumerInfo() any {
	sname, cname, ok := r.twoTokens("CONSUMER.INFO.")
	if !ok {
		return consumerErr(errBadRequest())
	}
	mset, e := r.consumerStream(sname)
	if e != nil {
		return consumerErr(e)
	}
	mset.mu.Lock()
	o := mset.consumers[cname]
	if o == nil {
		mset.mu.Unlock()
		return consumerErr(errConsumerNotFound())
	}
	ci := o.infoLocked()
	mset.mu.Unlock()
	if mset.replicated { // led by the stream's leader, on the stream's replicas
		ci.Cluster = mset.clusterInfo()
	}
	return &JSApiConsumerInfoResponse{ConsumerInfo: ci}
}

func (r *apiRequest) consumerDelete() any {
	sname, cname, ok := r.twoTokens("CONSUMER.DELETE.")
	if !ok {
		return consumerErr(errBadRequest())
	}
	mset, e := r.consumerStream(sname)
	if e != nil {
		return consumerErr(e)
	}
	if mset.replicated && !mset.isLocalConsumer(cname) {
		return r.proposeConsumerDelete(mset, cname)
	}
	mset.mu.Lock()
	o := mset.consumers[cname]
	if o == nil {
		mset.mu.Unlock()
		return &JSApiConsumerDeleteResponse{apiResponse: apiResponse{Error: errConsumerNotFound()}}
	}
	sends := mset.deleteConsumerLocked(o)
	o.queueOutLocked(sends)
	mset.mu.Unlock()
	o.flushOut()
	return &JSApiConsumerDeleteResponse{Success: true}
}

// pagedConsumers is the page of the stream's consumers an offset asks for.
func (r *apiRequest) pagedConsumers(prefix string, limit int) ([]*consumer, apiPaged, *ApiError) {
	var req JSApiConsumersRequest
	if e := r.unmarshal(&req); e != nil {
		return nil, apiPaged{}, e
	}
	mset, e := r.consumerStream(strings.TrimPrefix(r.subject, prefix))
	if e != nil {
		return nil, apiPaged{}, e
	}
	mset.mu.Lock()
	all := mset.consumerListLocked()
	mset.mu.Unlock()
	off := min(max(req.Offset, 0), len(all))
	page := all[off:min(off+limit, len(all))]
	return page, apiPaged{Total: len(all), Offset: off, Limit: limit}, nil
}

func (r *apiRequest) consumerNames() any {
	list, paged, e := r.pagedConsumers("CONSUMER.NAMES.", jsNamesLimit)
	if e != nil {
		return &JSApiConsumerNamesResponse{apiResponse: apiResponse{Error: e}}
	}
	resp := &JSApiConsumerNamesResponse{apiPaged: paged, Consumers: []string{}}
	for _, o := range list {
		resp.Consumers = append(resp.Consumers, o.name)
	}
	return resp
}

func (r *apiRequest) consumerList() any {
	list, paged, e := r.pagedConsumers("CONSUMER.LIST.", jsListLimit)
	if e != nil {
		return &JSApiConsumerListResponse{apiResponse: apiResponse{Error: e}}
	}
	resp := &JSApiConsumerListResponse{apiPaged: paged, Consumers: []*ConsumerInfo{}}
	for _, o := range list {
		o.mset.mu.Lock()
		if !o.closed {
			resp.Consumers = append(resp.Consumers, o.infoLocked())
		}
		o.mset.mu.Unlock()
	}
	return resp
}

// consumerNext handles CONSUMER.MSG.NEXT.<stream>.<consumer>: no JSON
// response, the consumer answers the reply subject with messages or a
// status. It reports whether the subject was one.
func (r *apiRequest) consumerNext() bool {
	if !strings.HasPrefix(r.subject, "CONSUMER.MSG.NEXT.") {
		return false
	}
	sname, cname, ok := r.twoTokens("CONSUMER.MSG.NEXT.")
	mset := r.jsa.lookup(sname)
	if !ok || mset == nil || mset.replicated {
		r.noResponders()
		return true
	}
	mset.mu.Lock()
	o := mset.consumers[cname]
	if o == nil || o.closed {
		mset.mu.Unlock()
		r.noResponders()
		return true
	}
	o.armIdleLocked()
	var sends []outMsg
	if o.push != nil {
		if r.reply != "" {
			sends = append(sends, statusMsg(strings.Clone(r.reply), "NATS/1.0 409 Consumer is push based\r\n\r\n"))
		}
	} else {
		sends = o.addRequestLocked(r.reply, r.body, nil)
	}
	o.queueOutLocked(sends)
	mset.mu.Unlock()
	o.flushOut()
	return true
}

// noResponders answers a pull request for a consumer that does not exist
// as nats-server's server does (nobody listens on its subject there): a
// 503 status to a client that asked for no-responders statuses.
func (r *apiRequest) noResponders() {
	if c := r.c; c != nil && c.route == nil && c.nc != nil && c.opts.NoResponders { // on c's read goroutine
		c.sendNoResponders(r.jsa.acc, jsAPIPrefix+r.subject, r.reply)
	}
}
