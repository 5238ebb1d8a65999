package server

import (
	"strings"

	cstate "github.com/nats-io/nats-server/v2/internal/consumer"
)

// The CONSUMER.* calls of a replicated stream are answered by the stream's
// leader (clusterRoutes). Reads (INFO, NAMES, LIST) read its applied
// state; a create, update or delete is decided on the leader, proposed,
// and answered by the leader after its own apply (consumer_cluster.go).

// proposeConsumerCreate decides a create or update against the leader's
// applied state and proposes it; the apply answers.
func (r *apiRequest) proposeConsumerCreate(mset *stream, req *CreateConsumerRequest) any {
	mset.mu.Lock()
	if mset.closed || !mset.leader {
		// No answer: the new leader may have received this request too
		// and answer it with its outcome (stream.proposed).
		mset.mu.Unlock()
		return nil
	}
	scfg := mset.cfg
	st := &consumerCreateState{Stream: &scfg, Limits: r.consumerLimits(), Clustered: true}
	want := consumerNameOf(&req.Config)
	for n, o := range mset.consumers {
		if n == want {
			st.Existing = o.cfg
		} else {
			st.Others = append(st.Others, o.cfg)
		}
	}
	cfg, name, e := decideConsumerCreate(st, req)
	op := cstate.OpCreate
	if o := mset.consumers[name]; o != nil && o.local && e == nil {
		e = errConsumerAlreadyExists() // a local consumer is not made durable
	} else if o != nil {
		op = cstate.OpUpdate
	}
	mset.mu.Unlock()
	if e != nil {
		return consumerErr(e)
	}
	ts := mset.jsa.js.srv.clock.Now().UnixNano()
	mset.proposeConsumerEntry(&cstate.Entry{Op: op, TS: ts, Consumer: name, Config: stateConfig(cfg)}, strings.Clone(r.reply))
	return nil
}

// proposeConsumerDelete proposes the delete of a consumer the leader has.
func (r *apiRequest) proposeConsumerDelete(mset *stream, name string) any {
	mset.mu.Lock()
	o := mset.consumers[name]
	mset.mu.Unlock()
	if o == nil {
		return &JSApiConsumerDeleteResponse{apiResponse: apiResponse{Error: errConsumerNotFound()}}
	}
	ts := mset.jsa.js.srv.clock.Now().UnixNano()
	mset.proposeConsumerEntry(&cstate.Entry{Op: cstate.OpDelete, TS: ts, Consumer: name}, strings.Clone(r.reply))
	return nil
}

// consumerStepdown: a consumer of a replicated stream is led by the
// stream's leader, so its stepdown is the stream's.
func (r *apiRequest) consumerStepdown() any {
	sname, cname, ok := r.twoTokens("CONSUMER.LEADER.STEPDOWN.")
	if !ok {
		return &successResponse{apiResponse: apiResponse{Error: errBadRequest()}}
	}
	mset := r.jsa.lookup(sname)
	if mset == nil {
		return &successResponse{apiResponse: apiResponse{Error: errStreamNotFound()}}
	}
	mset.mu.Lock()
	o, g := mset.consumers[cname], mset.group
	mset.mu.Unlock()
	switch {
	case o == nil:
		return &successResponse{apiResponse: apiResponse{Error: errConsumerNotFound()}}
	case g == nil:
		return &successResponse{apiResponse: apiResponse{Error: errClusterNotAvail()}}
	}
	return stepdownAnswer(transferLeadership(g))
}

// subscribeConsumerRequests makes the leader listen for pull requests of
// the stream's consumers (its ingest subscriptions: dropped when it stops
// leading) and for their acks.
func (mset *stream) subscribeConsumerRequests() *subscription {
	sub, err := mset.jsa.acc.subscribeInternal(jsAPIPrefix+"CONSUMER.MSG.NEXT."+mset.name+".*", "", mset.pullRequestMsg)
	if err != nil {
		mset.jsa.js.srv.Errorf("JetStream: stream %q cannot listen for pull requests: %v", mset.name, err)
		return nil
	}
	mset.ensureAckSub()
	return sub
}

// pullRequestMsg is a CONSUMER.MSG.NEXT request on the leader.
func (mset *stream) pullRequestMsg(_ *subscription, _ *client, _ *Account, subject, reply string, _, msg []byte) {
	cname := strings.TrimPrefix(subject, jsAPIPrefix+"CONSUMER.MSG.NEXT."+mset.name+".")
	if reply == "" {
		return
	}
	mset.mu.Lock()
	o := mset.consumers[cname]
	if o == nil || o.closed || !o.leadsLocked() {
		mset.mu.Unlock()
		if o == nil { // nats-server: nobody listens for it, the requester hears 503
			mset.jsa.js.srv.deliver(nil, mset.jsa.acc, strings.Clone(reply), "", []byte("NATS/1.0 503\r\nNats-Subject: "+subject+"\r\n\r\n"), nil)
		}
		return
	}
	o.armIdleLocked()
	if o.push != nil {
		o.queueOutLocked([]outMsg{statusMsg(strings.Clone(reply), "NATS/1.0 409 Consumer is push based\r\n\r\n")})
	} else {
		o.queueOutLocked(o.addRequestLocked(reply, msg, nil))
	}
	mset.mu.Unlock()
	o.flushOut()
}

// startConsumersLeading: the stream's leader is ready (its whole log
// applied); its consumers' soft state is rebuilt from their State.
func (mset *stream) startConsumersLeading() *subscription {
	sub := mset.subscribeConsumerRequests()
	mset.mu.Lock()
	if mset.leader && !mset.closed {
		for _, o := range mset.logConsumersLocked() {
			o.startLeadingLocked()
			o.pumpLeaderLocked()
		}
	}
	mset.mu.Unlock()
	mset.ensureFCSub() // push consumers' clients answer flow control to the leader
	return sub
}

// stopConsumersLeading drops the consumers' soft state and the ack
// subscription when the stream's leader stops leading.
func (mset *stream) stopConsumersLeading() {
	mset.mu.Lock()
	flush := mset.dropLocalConsumersLocked()
	for _, o := range mset.consumerListLocked() {
		if sends := o.stopLeadingLocked(); len(sends) > 0 {
			o.queueOutLocked(sends)
			flush = append(flush, o)
		}
	}
	sub := mset.ackSub
	mset.ackSub = nil
	mset.mu.Unlock()
	flushConsumers(flush)
	if sub != nil {
		mset.jsa.acc.unsubscribe(sub)
	}
}
