package server

import "time"

// Pacing of push deliveries: rate_limit_bps and replay_policy original.
// When a message may not go yet the pump stops and a timer restarts it.

// paceLocked is how long message m of size bytes must wait before it may
// be delivered (0: now). A message that may go is paid for at once.
func (o *consumer) paceLocked(m *StoreMsg, size int) time.Duration {
	p := o.push
	if !p.replay && o.cfg.RateLimit <= 0 {
		return 0 // nothing paces it: no clock read per message
	}
	now := o.now()
	if p.replay && p.lastTS > 0 {
		due := p.lastSent.Add(time.Duration(m.TS - p.lastTS))
		if wait := due.Sub(now); wait > time.Millisecond {
			return wait
		}
	}
	if bps := o.cfg.RateLimit; bps > 0 {
		// A token bucket of bytes at bps/8 a second, holding at most one
		// message's worth: a message waits until the bytes before it are
		// paid for.
		if p.rateAt.After(now) {
			return p.rateAt.Sub(now)
		}
		cost := time.Duration(float64(size*8) / float64(bps) * float64(time.Second))
		p.rateAt = now.Add(cost)
	}
	return 0
}

// armWaitLocked stops the pump for d; the timer restarts it.
func (o *consumer) armWaitLocked(d time.Duration) {
	p := o.push
	p.waiting = true
	if p.waitT != nil {
		p.waitT.Reset(d)
		return
	}
	p.waitT = o.mset.jsa.js.srv.clock.AfterFunc(d, o.waitFired)
}

func (o *consumer) waitFired() {
	mset := o.mset
	mset.mu.Lock()
	if o.closed || o.push == nil || !o.leadsLocked() {
		mset.mu.Unlock()
		return
	}
	o.push.waiting = false
	o.queueOutLocked(o.pumpLocked(nil))
	mset.mu.Unlock()
	o.flushOut()
}
