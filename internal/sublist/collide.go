package sublist

import (
	"errors"
	"strings"
)

// ErrCollideBudget is returned when a collision query ran out of work.
var ErrCollideBudget = errors.New("sublist: collision check exceeded its work budget")

// CollisionSet holds valid subjects (wildcards allowed) in a token trie and
// finds one of them that collides with a given subject: some literal
// subject matches both (SubjectsCollide). A query follows only the trie's
// branches that can match: a literal token looks up that token and '*'; a
// stored '>' collides at once; a query '>' collides with any stored subject
// that goes on. Only a query '*' must try every literal child, so sets of
// literal subjects and of wildcards behind literal prefixes check in time
// linear in their size. Mixes of leading wildcards and many distinct
// literals can still cost a pass over the trie per query (pairwise
// collision of wildcard patterns is as hard as orthogonal vectors), so
// every query draws on a budget of node visits and reports
// ErrCollideBudget when it is spent.
type CollisionSet struct {
	root   cnode
	budget int
}

type cnode struct {
	lit  map[string]*cnode
	pwc  *cnode
	fwc  string // a stored subject ending in '>' here
	end  string // a stored subject ending here
	some string // any stored subject through this node
}

// NewCollisionSet returns an empty set whose queries may visit budget trie
// nodes in all.
func NewCollisionSet(budget int) *CollisionSet {
	return &CollisionSet{budget: budget}
}

// AddBudget allows n more node visits.
func (cs *CollisionSet) AddBudget(n int) { cs.budget += n }

// SetBudget allows n node visits from now on (a set kept for many
// queries gives each its own).
func (cs *CollisionSet) SetBudget(n int) { cs.budget = n }

// Add stores a valid subject.
func (cs *CollisionSet) Add(subject string) {
	n := &cs.root
	s := subject
	for {
		if n.some == "" {
			n.some = subject
		}
		tok, rest, more := strings.Cut(s, tsep)
		if tok == fwc {
			if n.fwc == "" {
				n.fwc = subject
			}
			return
		}
		var next *cnode
		if tok == pwc {
			if n.pwc == nil {
				n.pwc = &cnode{}
			}
			next = n.pwc
		} else {
			if n.lit == nil {
				n.lit = map[string]*cnode{}
			}
			if next = n.lit[tok]; next == nil {
				next = &cnode{}
				n.lit[tok] = next
			}
		}
		n, s = next, rest
		if !more {
			if n.some == "" {
				n.some = subject
			}
			if n.end == "" {
				n.end = subject
			}
			return
		}
	}
}

// Collides returns a stored subject that collides with subject (a valid
// subject), or "" when none does.
func (cs *CollisionSet) Collides(subject string) (string, error) {
	return cs.collide(&cs.root, subject, true)
}

// collide matches the rest s (more: s has a token) from n.
func (cs *CollisionSet) collide(n *cnode, s string, more bool) (string, error) {
	if cs.budget--; cs.budget < 0 {
		return "", ErrCollideBudget
	}
	if !more {
		return n.end, nil
	}
	if n.fwc != "" {
		return n.fwc, nil // a stored '>' takes any token onwards
	}
	tok, rest, next := strings.Cut(s, tsep)
	switch tok {
	case fwc:
		// Anything stored that has a token here (n.fwc was checked).
		if n.pwc != nil {
			return n.pwc.some, nil
		}
		for _, c := range n.lit {
			return c.some, nil
		}
		return "", nil
	case pwc:
		if n.pwc != nil {
			if hit, err := cs.collide(n.pwc, rest, next); hit != "" || err != nil {
				return hit, err
			}
		}
		for _, c := range n.lit {
			if hit, err := cs.collide(c, rest, next); hit != "" || err != nil {
				return hit, err
			}
		}
		return "", nil
	}
	if c := n.lit[tok]; c != nil {
		if hit, err := cs.collide(c, rest, next); hit != "" || err != nil {
			return hit, err
		}
	}
	if n.pwc != nil {
		return cs.collide(n.pwc, rest, next)
	}
	return "", nil
}
