package server

import (
	"time"

	cstate "github.com/nats-io/nats-server/v2/internal/consumer"
	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// A pull consumer with an inactive_threshold (every ephemeral has one) is
// deleted once it has had no waiting pull request for that long, as
// nats-server deletes it: an ephemeral whose client went away does not
// live on.

// armIdleLocked (re)arms the inactivity check; called at create and
// whenever a pull request arrives.
func (o *consumer) armIdleLocked() {
	d := o.cfg.InactiveThreshold
	if d <= 0 || o.closed {
		return
	}
	o.active = o.now()
	if o.idleT != nil {
		o.idleT.Reset(d)
		return
	}
	o.idleT = o.mset.jsa.js.srv.clock.AfterFunc(d, o.idleFired)
}

func (o *consumer) idleFired() {
	mset := o.mset
	mset.mu.Lock()
	if o.closed || mset.consumers[o.name] != o {
		mset.mu.Unlock()
		return
	}
	d := o.cfg.InactiveThreshold
	bound := len(o.waiting) > 0 || (o.push != nil && o.push.active)
	if idle := o.now().Sub(o.active); bound || idle < d {
		wait := d - idle
		if bound {
			o.active, wait = o.now(), d
		}
		o.idleT.Reset(max(wait, time.Millisecond))
		mset.mu.Unlock()
		return
	}
	if o.viaLog() {
		o.idleLeaderLocked()
		mset.mu.Unlock()
		return
	}
	sends := mset.deleteConsumerLocked(o)
	o.queueOutLocked(sends)
	mset.mu.Unlock()
	o.flushOut()
}

// deleteConsumerLocked applies the delete, stops o, removes its files
// (durably: a power loss after the answer does not bring it back) and
// returns the 409 Consumer Deleted statuses for its waiting requests.
func (mset *stream) deleteConsumerLocked(o *consumer) []outMsg {
	o.applyLocked(&cstate.Entry{Op: cstate.OpDelete, TS: o.now().UnixNano()})
	sends := o.releaseRequestsLocked()
	o.stopLocked()
	delete(mset.consumers, o.name)
	if o.persists() { // synced into the parent before the delete is answered
		vfs.RemoveAllSynced(mset.jsa.js.fs, o.dir())
	}
	return sends
}

// releaseRequestsLocked answers every waiting request of a consumer being
// deleted with nats-server's 409 Consumer Deleted.
func (o *consumer) releaseRequestsLocked() []outMsg {
	var sends []outMsg
	for _, wr := range o.waiting {
		sends = append(sends, statusMsg(wr.reply, "NATS/1.0 409 Consumer Deleted\r\n\r\n"))
	}
	return sends
}
