package server

import "strings"

// startLocked starts a new or recovered consumer's leader-only soft state:
// a push consumer registers its deliver subject, a pull consumer starts
// its inactivity clock. Delivery starts with the caller's pumpLocked
// (after CONSUMER.CREATE's answer is made, as nats-server answers before
// its delivery loop sends anything).
func (o *consumer) startLocked() {
	if !o.cfg.isPush() {
		o.armIdleLocked()
		return
	}
	o.push = o.newPushState()
	o.mset.jsa.acc.watchDeliver(o, o.push.subj)
	o.startPushLocked()
}

// updatePushLocked applies an update of a push consumer's config to its
// soft state: a new deliver subject is watched instead of the old one.
func (o *consumer) updatePushLocked() {
	p := o.push
	if p == nil {
		return
	}
	if o.cfg.FlowControl && p.pblim == 0 {
		p.pblim, p.maxpb = jsFlowControlMax, jsFlowControlMax/16
	} else if !o.cfg.FlowControl {
		p.pblim, p.maxpb, p.fcid, p.pbytes, p.fcsz = 0, 0, "", 0, 0
	}
	o.armHeartbeatLocked()
	if o.cfg.DeliverSubject == p.subj {
		return
	}
	acc := o.mset.jsa.acc
	acc.unwatchDeliver(o)
	p.subj = o.cfg.DeliverSubject
	acc.watchDeliver(o, p.subj)
	p.active = hasInterest(acc, p.subj)
	o.queueOutLocked(o.pumpLocked(nil))
}

// flushConsumerNamed sends what the named consumer queued (after a create
// or update, which queue under the stream's lock).
func (mset *stream) flushConsumerNamed(name string) {
	mset.mu.Lock()
	o := mset.consumers[name]
	mset.mu.Unlock()
	if o != nil {
		o.flushOut()
	}
}

// ensureFCSub makes the stream listen on $JS.FC.<stream>.> (once), where
// push consumers' clients answer flow control. Called without mset.mu.
func (mset *stream) ensureFCSub() {
	mset.mu.Lock()
	need := mset.fcSub == nil && !mset.closed && mset.hasPushLocked()
	mset.mu.Unlock()
	if !need {
		return
	}
	acc := mset.jsa.acc
	sub, err := acc.subscribeInternal("$JS.FC."+mset.name+".>", "", mset.fcMsg)
	if err != nil {
		mset.jsa.js.srv.Errorf("JetStream: stream %q cannot listen for flow control: %v", mset.name, err)
		return
	}
	mset.mu.Lock()
	keep := mset.fcSub == nil && !mset.closed
	if keep {
		mset.fcSub = sub
	}
	mset.mu.Unlock()
	if !keep {
		acc.unsubscribe(sub)
	}
}

func (mset *stream) hasPushLocked() bool {
	for _, o := range mset.consumers {
		if o.push != nil {
			return true
		}
	}
	return false
}

// fcMsg handles a flow control answer: $JS.FC.<stream>.<consumer>.<id>.
func (mset *stream) fcMsg(_ *subscription, _ *client, _ *Account, subject, _ string, hdr, _ []byte) {
	rest := strings.TrimPrefix(subject, "$JS.FC."+mset.name+".")
	name, _, ok := strings.Cut(rest, ".")
	if !ok || len(rest) == len(subject) {
		return
	}
	mset.mu.Lock()
	o := mset.consumers[name]
	if o == nil || o.closed {
		mset.mu.Unlock()
		return
	}
	o.queueOutLocked(o.ackFCAnsweredLocked(subject, hdr)) // before the answer clears the request
	o.queueOutLocked(o.flowControlAnsweredLocked(subject))
	mset.mu.Unlock()
	o.flushOut()
}
