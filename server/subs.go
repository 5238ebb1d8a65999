package server

import (
	"github.com/nats-io/nats-server/v2/internal/proto"
	"math/rand/v2"
	"unsafe"

	"github.com/nats-io/nats-server/v2/internal/sublist"
)

// bytesToString views b as a string without copying; the caller must not
// keep the string beyond b's lifetime.
func bytesToString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// unsafeBytes views s as bytes; the caller must not modify them.
func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

func fastrand() uint32 { return rand.Uint32() }

// ProcessSub handles SUB.
func (c *client) ProcessSub(subject, queue, sid []byte) error {
	if c.tracing() {
		c.traceIn("SUB", subject, queue, sid)
	}
	subj, q, id := string(subject), string(queue), string(sid)
	if !sublist.ValidSubject(subj) || (q != "" && !sublist.ValidQueueName(q)) {
		c.sendErr("Invalid Subject")
		return nil
	}
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return errClosed
	}
	if _, dup := c.subs[id]; dup {
		c.mu.Unlock()
		c.okIfVerbose()
		return nil
	}
	if max := c.srv.getOpts().MaxSubs; max > 0 && len(c.subs) >= max {
		c.mu.Unlock()
		c.srv.Errorf("%s - maximum subscriptions exceeded", c)
		c.sendErr("maximum subscriptions exceeded")
		return nil
	}
	if q == streamIngestQueue || (c.perms != nil && !c.perms.canSubscribe(subj, q)) {
		c.mu.Unlock()
		c.subPermissionViolation(subj, q)
		return nil
	}
	if c.acc == nil { // no CONNECT yet with no_auth_user: not authenticated
		c.mu.Unlock()
		return proto.ErrAuthorization
	}
	sub := &subscription{client: c, subject: subj, queue: q, sid: id}
	c.subs[id] = sub
	acc := c.acc
	c.mu.Unlock()
	if err := acc.insertSub(sub); err != nil {
		c.mu.Lock()
		delete(c.subs, id)
		c.mu.Unlock()
		c.sendErr("Invalid Subject")
		return nil
	}
	c.okIfVerbose()
	return nil
}

func (c *client) okIfVerbose() {
	if c.opts.Verbose {
		c.sendOK()
	}
}

// ProcessUnsub handles UNSUB [max].
func (c *client) ProcessUnsub(sid []byte, max int64) error {
	if c.tracing() {
		c.traceIn("UNSUB", sid)
	}
	c.mu.Lock()
	sub := c.subs[string(sid)]
	if sub == nil {
		c.mu.Unlock()
		c.okIfVerbose()
		return nil
	}
	if max > 0 && sub.nm.Load() < max {
		sub.max.Store(max)
		c.mu.Unlock()
		c.okIfVerbose()
		return nil
	}
	delete(c.subs, sub.sid)
	acc := c.acc
	c.mu.Unlock()
	acc.unsubscribe(sub)
	c.okIfVerbose()
	return nil
}

// autoUnsubscribe removes a subscription that reached its max deliveries.
func (c *client) autoUnsubscribe(sub *subscription) {
	c.mu.Lock()
	if c.subs[sub.sid] == sub {
		delete(c.subs, sub.sid)
	}
	acc := c.acc
	c.mu.Unlock()
	if acc != nil {
		acc.unsubscribe(sub)
	}
}
