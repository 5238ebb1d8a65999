package server

import (
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/internal/sublist"
)

// clientPerms is the compiled form of a user's Permissions.
type clientPerms struct {
	pubAllow, pubDeny []string
	subAllow, subDeny []subPerm // subAllow nil: every subject
	pubCache          map[string]bool
	resp              *ResponsePermission
	replies           map[string]replyGrant // reply subjects granted by allow_responses
}

type replyGrant struct {
	left    int
	expires time.Time
}

const maxPermCache = 256

func newClientPerms(p *Permissions) *clientPerms {
	if p == nil {
		return nil
	}
	cp := &clientPerms{pubCache: map[string]bool{}}
	if p.Publish != nil {
		cp.pubAllow, cp.pubDeny = p.Publish.Allow, p.Publish.Deny
	}
	if p.Subscribe != nil {
		cp.subAllow, cp.subDeny = subPerms(p.Subscribe.Allow), subPerms(p.Subscribe.Deny)
	}
	if p.Response != nil {
		r := *p.Response
		if r.MaxMsgs == 0 {
			r.MaxMsgs = 1
		}
		cp.resp = &r
		cp.replies = map[string]replyGrant{}
		if p.Publish == nil || len(p.Publish.Allow) == 0 {
			// allow_responses alone restricts publishing to replies.
			cp.pubAllow = []string{}
		}
	}
	return cp
}

func matchesAny(subject string, patterns []string) bool {
	for _, p := range patterns {
		if sublist.MatchLiteral(subject, p) {
			return true
		}
	}
	return false
}

// check applies allow (nil = everything) then deny.
func check(subject string, allow, deny []string) bool {
	if allow != nil && !matchesAny(subject, allow) {
		return false
	}
	return !matchesAny(subject, deny)
}

// pubAllowed is called from the client's read loop.
func (c *client) pubAllowed(subject string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.perms
	if ok, hit := p.pubCache[subject]; hit && ok {
		return true
	}
	ok := check(subject, p.pubAllow, p.pubDeny)
	if ok {
		if len(p.pubCache) >= maxPermCache {
			clear(p.pubCache)
		}
		p.pubCache[strings.Clone(subject)] = true
		return true
	}
	return p.useReplyLocked(subject)
}

func (p *clientPerms) useReplyLocked(subject string) bool {
	g, ok := p.replies[subject]
	if !ok {
		return false
	}
	if !g.expires.IsZero() && time.Now().After(g.expires) {
		delete(p.replies, subject)
		return false
	}
	g.left--
	if g.left <= 0 {
		delete(p.replies, subject)
	} else {
		p.replies[subject] = g
	}
	return true
}

// allowReplyLocked records a reply subject delivered to the client.
func (p *clientPerms) allowReplyLocked(reply string) {
	if len(p.replies) >= 64*1024 {
		return // bounded; oldest grants expire or are used
	}
	g := replyGrant{left: p.resp.MaxMsgs}
	if p.resp.Expires > 0 {
		g.expires = time.Now().Add(p.resp.Expires)
	}
	p.replies[strings.Clone(reply)] = g
}

func (c *client) pubPermissionViolation(subject string) {
	c.srv.Errorf("%s - Publish Violation - Subject %q", c, subject)
	c.sendErr(fmt.Sprintf("Permissions Violation for Publish to %q", subject))
}

func (c *client) subPermissionViolation(subject, queue string) {
	c.srv.Errorf("%s - Subscription Violation - Subject %q", c, subject)
	if queue != "" {
		c.sendErr(fmt.Sprintf("Permissions Violation for Subscription to %q using queue %q", subject, queue))
		return
	}
	c.sendErr(fmt.Sprintf("Permissions Violation for Subscription to %q", subject))
}
