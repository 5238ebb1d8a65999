package server

import (
	"fmt"
	"strings"

	"github.com/nats-io/nats-server/v2/internal/sublist"
)

// subPerm is one subscribe permission: a subject, optionally qualified by a
// queue group ("orders.> workers"), which then applies only to queue
// subscriptions of a matching group (the group may be a pattern: "v1.*").
type subPerm struct {
	subject, queue string
}

// subPerms splits "subject [queue]" entries; nil stays nil (no list).
func subPerms(entries []string) []subPerm {
	if entries == nil {
		return nil
	}
	out := make([]subPerm, 0, len(entries))
	for _, e := range entries {
		f := strings.Fields(e)
		switch len(f) {
		case 1:
			out = append(out, subPerm{subject: f[0]})
		case 2:
			out = append(out, subPerm{subject: f[0], queue: f[1]})
		default:
			// Refused by checkPermSubjects; kept unmatchable, so a bad
			// allow entry allows nothing. A bad deny entry denies all.
			out = append(out, subPerm{subject: e, queue: e})
		}
	}
	return out
}

// queueMatches reports whether queue is named by pattern: equal (a queue
// name may contain '*' or '>' literally) or matched as a subject pattern.
func queueMatches(queue, pattern string) bool {
	return queue == pattern || (sublist.SubjectHasWildcard(pattern) && sublist.SubjectIsSubsetMatch(queue, pattern))
}

// canSubscribe checks a subscription as nats-server does. Allow: a
// subscription on subjects within a plain allow entry is allowed; when
// queue-qualified allow entries cover the subject, a queue subscription is
// allowed only if its group matches one of them, and a plain subscription
// needs a plain entry. Deny: a plain deny entry covering the subject
// refuses; a queue-qualified one refuses queue subscriptions of its group.
// A wildcard subscription counts as covered when it is a subset of the
// entry (deliveries it would get from narrower denies are dropped later).
func (p *clientPerms) canSubscribe(subject, queue string) bool {
	if p.subAllow != nil {
		plain, queued, groupOK := false, false, false
		for _, a := range p.subAllow {
			if !sublist.SubjectIsSubsetMatch(subject, a.subject) {
				continue
			}
			if a.queue == "" {
				plain = true
				continue
			}
			queued = true
			groupOK = groupOK || (queue != "" && queueMatches(queue, a.queue))
		}
		allowed := plain
		if queue != "" && queued {
			allowed = groupOK
		}
		if !allowed {
			return false
		}
	}
	for _, d := range p.subDeny {
		if !sublist.SubjectIsSubsetMatch(subject, d.subject) {
			continue
		}
		if d.queue == "" || (queue != "" && queueMatches(queue, d.queue)) {
			return false
		}
	}
	return true
}

// deniesDelivery reports whether a message on subject must not reach a
// subscription of the given queue group ("" for none): it catches what a
// wildcard subscription receives from a narrower deny entry.
func (p *clientPerms) deniesDelivery(subject, queue string) bool {
	for _, d := range p.subDeny {
		if (d.queue == "" || (queue != "" && queueMatches(queue, d.queue))) && sublist.MatchLiteral(subject, d.subject) {
			return true
		}
	}
	return false
}

// checkPermSubjects validates permission entries as nats-server does:
// subjects, and for subscribe permissions "subject queue".
func checkPermSubjects(sp *SubjectPermission, allowQueue bool) error {
	if sp == nil {
		return nil
	}
	for _, list := range [][]string{sp.Allow, sp.Deny} {
		for _, e := range list {
			if sublist.ValidSubject(e) {
				continue
			}
			f := strings.Fields(e)
			switch {
			case !allowQueue || len(f) != 2 || !sublist.ValidSubject(f[0]):
				return fmt.Errorf("subject %q is not a valid subject", e)
			case !sublist.ValidSubject(f[1]):
				return fmt.Errorf("queue %q is not a valid queue", f[1])
			}
		}
	}
	return nil
}

// checkPermissions validates a user's publish and subscribe permissions.
func checkPermissions(p *Permissions) error {
	if p == nil {
		return nil
	}
	if err := checkPermSubjects(p.Publish, false); err != nil {
		return err
	}
	return checkPermSubjects(p.Subscribe, true)
}

// checkUsersPermissions validates every configured user's permissions
// (options set by an embedder, which no config parse checked).
func checkUsersPermissions(o *Options) error {
	for _, u := range o.Users {
		if err := checkPermissions(u.Permissions); err != nil {
			return fmt.Errorf("user %q: %v", u.Username, err)
		}
	}
	for _, u := range o.Nkeys {
		if err := checkPermissions(u.Permissions); err != nil {
			return fmt.Errorf("nkey %q: %v", u.Nkey, err)
		}
	}
	return nil
}
