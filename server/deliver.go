package server

import (
	"github.com/nats-io/nats-server/v2/internal/proto"
	"strconv"
	"unsafe"

	"github.com/nats-io/nats-server/v2/internal/sublist"
)

// ProcessPub handles PUB and HPUB from the client.
func (c *client) ProcessPub(subject, reply []byte, hdr int, msg []byte) error {
	b := c.bound.Load()
	if b == nil { // no CONNECT yet with no_auth_user: not authenticated
		return proto.ErrAuthorization
	}
	if c.tracing() {
		c.tracePub(subject, reply, hdr, msg)
	}
	c.rstats.inMsgs++
	c.rstats.inBytes += int64(len(msg))
	if c.opts.Verbose {
		c.sendOK()
	}
	subj := bytesToString(subject)
	if c.opts.Pedantic && !sublist.ValidLiteralSubject(subj) {
		c.sendErr("Invalid Publish Subject")
		return nil
	}
	if !sublist.ValidPublishSubject(subj) {
		return nil // nothing can match it
	}
	if b.perms != nil && !c.pubAllowed(subj) {
		c.pubPermissionViolation(subj)
		return nil
	}
	if r := bytesToString(reply); clusterOnlySubject(subj) && c.clusterOnlyPub(subj) || clusterOnlySubject(r) && c.clusterOnlyPub(r) {
		return nil // cluster_only.go
	}
	var h []byte
	if hdr > 0 {
		h, msg = msg[:hdr], msg[hdr:]
	}
	acc := b.acc
	delivered := c.srv.deliver(c, acc, subj, bytesToString(reply), h, msg)
	if delivered == 0 && len(reply) > 0 && c.opts.NoResponders {
		c.sendNoResponders(acc, subj, bytesToString(reply))
	}
	return nil
}

// deliver routes one message within acc and returns how many subscriptions
// (a route counting once) received it. c is the publishing client, or nil
// for internal publishes.
func (s *Server) deliver(c *client, acc *Account, subject, reply string, hdr, msg []byte) int {
	return s.deliverWaking(c, nil, acc, subject, reply, hdr, msg)
}

// deliverBatch is deliver for an internal publisher that delivers many
// messages in a row (a raft group applying a batch of entries answers
// each publish): the receivers' write loops are not woken at each message
// but gathered in wake, for the caller to wake once (wakeAll). Woken at
// the first pub ack of a batch, a client's write loop sent that one ack
// while the rest of the batch was still being applied, and the rest in
// further writes.
func (s *Server) deliverBatch(wake map[*client]struct{}, acc *Account, subject, reply string, hdr, msg []byte) int {
	return s.deliverWaking(nil, wake, acc, subject, reply, hdr, msg)
}

// wakeAll wakes the write loop of every client in wake and empties it.
func wakeAll(wake map[*client]struct{}) {
	for dst := range wake {
		dst.out.signal()
		delete(wake, dst)
	}
}

// wakeLater arranges for dst's write loop to be woken: at the end of the
// publisher's read (c), of the internal publisher's batch (wake), or now.
func wakeLater(c *client, wake map[*client]struct{}, dst *client) {
	switch {
	case c != nil:
		c.pcd[dst] = struct{}{}
	case wake != nil:
		wake[dst] = struct{}{}
	default:
		dst.out.signal()
	}
}

func (s *Server) deliverWaking(c *client, wake map[*client]struct{}, acc *Account, subject, reply string, hdr, msg []byte) int {
	r := matchSubject(acc, subject)
	n := 0
	var fwd routeForwards
	// afterRoutes subscribers run once the routes have the message (a
	// subject matches one of an account's API subscriptions at most; a
	// third would run in place).
	var late [2]*subscription
	nlate := 0
	for _, sub := range r.Plain {
		if sub.route != nil {
			fwd.plain(sub.route)
			continue
		}
		if sub.afterRoutes && nlate < len(late) {
			late[nlate] = sub
			nlate++
			continue
		}
		if c != nil && sub.client == c && !c.opts.Echo {
			continue
		}
		if s.deliverTo(c, wake, acc, sub, subject, reply, hdr, msg) {
			n++
		}
	}
	for i := range r.Queues {
		sub := pickQueueMember(c, r.Queues[i].Members)
		switch {
		case sub == nil:
		case sub.route != nil:
			fwd.queue(sub.route, r.Queues[i].Name)
		case s.deliverTo(c, wake, acc, sub, subject, reply, hdr, msg):
			n++
		}
	}
	n += fwd.send(c, wake, acc, subject, reply, hdr, msg)
	for _, sub := range late[:nlate] {
		if s.deliverTo(c, wake, acc, sub, subject, reply, hdr, msg) {
			n++
		}
	}
	return n
}

// matchSubject looks subject up without letting the routing table keep
// it: subjects on the publish path are views of the read buffer.
func matchSubject(acc *Account, subject string) *sublist.Result[*subscription] {
	return acc.sl.MatchBytes(unsafe.Slice(unsafe.StringData(subject), len(subject)))
}

// pickQueueMember chooses one member at random, preferring members on
// this server, and skipping the publisher's own subscriptions when it has
// echo off. A route member is chosen only when no local one can take it.
func pickQueueMember(c *client, members []*subscription) *subscription {
	if len(members) == 0 {
		return nil
	}
	start := 0
	if c != nil {
		start = c.rng.IntN(len(members))
	} else {
		start = int(fastrand() % uint32(len(members)))
	}
	var remote *subscription
	for i := range members {
		sub := members[(start+i)%len(members)]
		if c != nil && sub.client == c && !c.opts.Echo {
			continue
		}
		if sub.route != nil {
			if remote == nil {
				remote = sub
			}
			continue
		}
		return sub
	}
	return remote
}

// routeForwards collects, per route, what one message must reach there:
// plain subscribers and/or named queue groups. Each route gets one copy.
// Up to four routes fit in a fixed array, so the common case does not
// allocate.
type routeForwards struct {
	n     int
	small [4]routeForward
	more  []routeForward
}

type routeForward struct {
	rc    *client
	plain bool
	// The queue groups to reach there: the first in q1, any others in
	// more (one group, the common case, costs no allocation per message).
	q1   string
	more []string
}

func (f *routeForwards) at(i int) *routeForward {
	if i < len(f.small) {
		return &f.small[i]
	}
	return &f.more[i-len(f.small)]
}

func (f *routeForwards) entry(rc *client) *routeForward {
	for i := 0; i < f.n; i++ {
		if e := f.at(i); e.rc == rc {
			return e
		}
	}
	if f.n >= len(f.small) {
		f.more = append(f.more, routeForward{})
	}
	e := f.at(f.n)
	f.n++
	e.rc = rc
	return e
}

func (f *routeForwards) plain(rc *client) { f.entry(rc).plain = true }
func (f *routeForwards) queue(rc *client, q string) {
	if e := f.entry(rc); e.q1 == "" {
		e.q1 = q
	} else {
		e.more = append(e.more, q)
	}
}

// send returns how many routes took the copy: a closing route, whose
// interest is still being removed, took none (counted, a stream publish
// whose leader's server just died was answered by nobody: issue 20; not
// counted, a publish nobody took gets "no responders" and the client
// retries at once, certain it was not stored).
func (f *routeForwards) send(c *client, wake map[*client]struct{}, acc *Account, subject, reply string, hdr, msg []byte) int {
	sent := 0
	for i := 0; i < f.n; i++ {
		e := f.at(i)
		rc := e.rc
		rc.mu.Lock()
		if rc.closing {
			rc.mu.Unlock()
			continue
		}
		sent++
		var qa [1]string
		queues := e.more
		if e.q1 != "" {
			qa[0] = e.q1
			queues = append(qa[:1:1], e.more...) // allocates only for several groups
		}
		rc.appendRMSGLocked(acc.Name, subject, reply, e.plain, queues, hdr, msg)
		rc.mu.Unlock()
		wakeLater(c, wake, rc)
	}
	return sent
}

// deliverTo hands the message to one subscription; wake as in deliverBatch.
func (s *Server) deliverTo(c *client, wake map[*client]struct{}, acc *Account, sub *subscription, subject, reply string, hdr, msg []byte) bool {
	if sub.icb != nil {
		s.callInternal(sub, c, acc, subject, reply, hdr, msg)
		return true
	}
	dst := sub.client
	if dst == nil || sub.closed.Load() {
		return false
	}
	if max := sub.max.Load(); max > 0 {
		nm := sub.nm.Add(1)
		if nm > max {
			return false
		}
		if nm == max {
			defer dst.autoUnsubscribe(sub)
		}
	}
	if sub.max.Load() == 0 {
		sub.nm.Add(1)
	}
	dst.mu.Lock()
	if dst.closing {
		dst.mu.Unlock()
		return false
	}
	if !dst.opts.Headers {
		hdr = nil
	}
	if dst.perms != nil && len(dst.perms.subDeny) > 0 && dst.perms.deniesDelivery(subject, sub.queue) {
		dst.mu.Unlock()
		return false
	}
	dst.appendMsgLocked(subject, sub.sid, reply, hdr, msg)
	if reply != "" && dst.perms != nil && dst.perms.resp != nil {
		dst.perms.allowReplyLocked(reply)
	}
	ok := dst.checkPendingLocked()
	dst.mu.Unlock()
	if !ok {
		return false
	}
	dst.stats.outMsgs.Add(1)
	dst.stats.outBytes.Add(int64(len(hdr) + len(msg)))
	if c != nil && c.route == nil {
		c.rstats.outMsgs++
		c.rstats.outBytes += int64(len(hdr) + len(msg))
		c.pcd[dst] = struct{}{}
	} else {
		s.stats.outMsgs.Add(1)
		s.stats.outBytes.Add(int64(len(hdr) + len(msg)))
		wakeLater(nil, wake, dst)
	}
	return true
}

// appendMsgLocked queues MSG or HMSG.
func (c *client) appendMsgLocked(subject, sid, reply string, hdr, msg []byte) {
	b := c.out.hdr[:0]
	if len(hdr) > 0 {
		b = append(b, "HMSG "...)
	} else {
		b = append(b, "MSG "...)
	}
	b = append(b, subject...)
	b = append(b, ' ')
	b = append(b, sid...)
	b = append(b, ' ')
	if reply != "" {
		b = append(b, reply...)
		b = append(b, ' ')
	}
	if len(hdr) > 0 {
		b = strconv.AppendInt(b, int64(len(hdr)), 10)
		b = append(b, ' ')
	}
	b = strconv.AppendInt(b, int64(len(hdr)+len(msg)), 10)
	b = append(b, "\r\n"...)
	c.out.writeMsg(b, hdr, msg)
}

// sendNoResponders answers a request nobody received with a 503 status on
// the requester's own subscription to the reply subject.
func (c *client) sendNoResponders(acc *Account, subject, reply string) {
	r := matchSubject(acc, reply)
	for _, sub := range r.Plain {
		if sub.client != c {
			continue
		}
		hdr := []byte("NATS/1.0 503\r\nNats-Subject: " + subject + "\r\n\r\n")
		c.mu.Lock()
		if c.closing {
			c.mu.Unlock()
			return
		}
		c.appendMsgLocked(reply, sub.sid, "", hdr, nil)
		c.checkPendingLocked()
		c.mu.Unlock()
		c.pcd[c] = struct{}{}
		return
	}
}
