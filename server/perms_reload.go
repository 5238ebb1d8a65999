package server

import (
	"fmt"
	"sort"
)

// removeDeniedSubs drops the subscriptions that the client's permissions
// no longer allow (a reload narrowed them) and tells the client about each
// with a -ERR naming the subscription, as nats-server does. Called after
// bindClient installed the new permissions.
func (c *client) removeDeniedSubs() {
	c.mu.Lock()
	p, acc := c.perms, c.acc
	if p == nil || acc == nil || c.closing {
		c.mu.Unlock()
		return
	}
	var removed []*subscription
	for id, sub := range c.subs {
		if !p.canSubscribe(sub.subject, sub.queue) {
			delete(c.subs, id)
			removed = append(removed, sub)
		}
	}
	user := c.user
	c.mu.Unlock()
	sort.Slice(removed, func(i, j int) bool { return removed[i].sid < removed[j].sid })
	for _, sub := range removed {
		acc.unsubscribe(sub)
		if sub.queue != "" {
			c.srv.Noticef("Removed sub %q using queue %q (sid %q) for user %q - not authorized", sub.subject, sub.queue, sub.sid, user)
			c.sendErr(fmt.Sprintf("Permissions Violation for Subscription to %q using queue %q (sid %q)", sub.subject, sub.queue, sub.sid))
			continue
		}
		c.srv.Noticef("Removed sub %q (sid %q) for user %q - not authorized", sub.subject, sub.sid, user)
		c.sendErr(fmt.Sprintf("Permissions Violation for Subscription to %q (sid %q)", sub.subject, sub.sid))
	}
}
