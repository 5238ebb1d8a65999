package sublist

import (
	"slices"
	"strings"
)

// Match returns every entry whose pattern matches the literal subject.
// The returned Result is shared (it may be cached and returned to other
// callers) and must not be modified. A subject that is not a valid literal
// subject matches nothing. A cache hit does not allocate.
//
// The subject becomes a cache key, so it must be an ordinary immutable
// string (not one aliasing a reusable buffer through package unsafe).
func (s *Sublist[T]) Match(subject string) *Result[T] {
	s.mu.RLock()
	r, ok := s.cache[subject]
	if !ok {
		r, ok = s.prefixLookup(subject)
	}
	s.mu.RUnlock()
	if ok {
		s.hits.Add(1)
		return r
	}
	return s.matchMiss(subject, true)
}

// MatchBytes is Match for a subject held in a byte slice, such as a parser
// buffer. It does not allocate unless the cache keeps the subject (a copy).
func (s *Sublist[T]) MatchBytes(subject []byte) *Result[T] {
	s.mu.RLock()
	r, ok := s.cache[string(subject)]
	if !ok {
		r, ok = s.prefixLookup(viewString(subject))
	}
	s.mu.RUnlock()
	if ok {
		s.hits.Add(1)
		return r
	}
	// A view of the caller's bytes: copied only if the cache keeps it.
	return s.matchMiss(viewString(subject), false)
}

// matchMiss computes the result for subject and caches it, unless the
// trie changed between computing and storing (see the package comment).
func (s *Sublist[T]) matchMiss(subject string, owned bool) *Result[T] {
	s.misses.Add(1)
	if !ValidPublishSubject(subject) {
		return s.empty
	}
	s.mu.RLock()
	r, dep := s.compute(subject)
	gen := s.gen
	s.mu.RUnlock()
	if !dep {
		// Its prefix may serve it; it goes on to the subject cache's own
		// admission too: past maxPrefix hot prefixes (orders.<id>.event
		// under orders.>) the prefix cache thrashes, and the subjects fit
		// the subject cache (TestHotPrefixesStayCached).
		s.prefixStore(subject, r, gen) // prefix.go
	}
	if !s.seen.admit(subject) {
		return r
	}
	if !owned {
		subject = strings.Clone(subject)
	}
	s.mu.Lock()
	if gen == s.gen {
		r = s.cacheStore(subject, r)
	}
	s.mu.Unlock()
	return r
}

// compute builds the Result for a valid literal subject, and reports
// whether it depends on the subject's last token (see prefix.go). Caller
// holds mu.
func (s *Sublist[T]) compute(subject string) (*Result[T], bool) {
	var buf [16]*node[T]
	dep := false
	nodes := collect(s.root, subject, buf[:0], &dep)
	return s.build(nodes), dep
}

// collect appends to out every node holding entries that match subject.
// It recurses only into "*" branches; literal descent is iterative. It
// sets *dep when a level it consults for the last token has literal
// tokens: only those make the result depend on which token that is.
func collect[T comparable](l *level[T], subject string, out []*node[T], dep *bool) []*node[T] {
	for l != nil {
		tok, rest, more := strings.Cut(subject, tsep)
		if n := l.fwc; n != nil {
			out = append(out, n)
		}
		if n := l.pwc; n != nil {
			if more {
				out = collect(n.next, rest, out, dep)
			} else if n.hasEntries() {
				out = append(out, n)
			}
		}
		if !more && len(l.nodes) > 0 {
			*dep = true
		}
		n := l.nodes[tok]
		if n == nil {
			return out
		}
		if !more {
			if n.hasEntries() {
				out = append(out, n)
			}
			return out
		}
		l, subject = n.next, rest
	}
	return out
}

// build turns matched nodes into a Result: the shared empty one, the
// node's own when one node matches (see node.solo), or a fresh one.
func (s *Sublist[T]) build(nodes []*node[T]) *Result[T] {
	if len(nodes) == 1 {
		if r := nodes[0].solo.Load(); r != nil {
			return r
		}
		r := s.assemble(nodes)
		nodes[0].solo.Store(r)
		return r
	}
	return s.assemble(nodes)
}

// assemble makes a new Result of the entries of nodes, sizing every slice
// exactly up front.
func (s *Sublist[T]) assemble(nodes []*node[T]) *Result[T] {
	np, nq, nm := 0, 0, 0
	for _, n := range nodes {
		np += n.plain.len()
		if n.queues != nil {
			nq += n.queues.len()
			for i := range n.queues.members {
				nm += n.queues.members[i].len()
			}
		}
	}
	if np == 0 && nq == 0 {
		return s.empty
	}
	r := &Result[T]{}
	if np > 0 {
		r.Plain = make([]T, 0, np)
		for _, n := range nodes {
			r.Plain = append(r.Plain, n.plain.items...)
		}
	}
	if nq > 0 {
		r.Queues = make([]Queue[T], 0, nq)
		backing := make([]T, 0, nm)
		for _, n := range nodes {
			if n.queues != nil {
				backing = r.addQueues(n.queues, backing)
			}
		}
	}
	return r
}

// addQueues merges the queue groups g of one node into r. Members of new groups are
// carved from backing with a capped capacity, so a later merge into the
// same group reallocates rather than overwriting a neighbour.
func (r *Result[T]) addQueues(g *groups[T], backing []T) []T {
	fresh := len(r.Queues) == 0 // names within one node are distinct
	for i, name := range g.names.items {
		items := g.members[i].items
		if !fresh {
			if j := r.queueIndex(name); j >= 0 {
				r.Queues[j].Members = append(r.Queues[j].Members, items...)
				continue
			}
		}
		start := len(backing)
		backing = append(backing, items...)
		members := backing[start:len(backing):len(backing)]
		r.Queues = append(r.Queues, Queue[T]{Name: name, Members: members})
	}
	return backing
}

func (r *Result[T]) queueIndex(name string) int {
	for i := range r.Queues {
		if r.Queues[i].Name == name {
			return i
		}
	}
	return -1
}

// Empty reports whether r holds no entries.
func (r *Result[T]) Empty() bool {
	return len(r.Plain) == 0 && len(r.Queues) == 0
}

// Len returns the total number of values in r, counting every queue member.
func (r *Result[T]) Len() int {
	n := len(r.Plain)
	for i := range r.Queues {
		n += len(r.Queues[i].Members)
	}
	return n
}

// HasInterest reports whether any entry matches the literal subject. It
// consults the match cache first and otherwise walks the trie, stopping at
// the first match; it never allocates and never fills the cache.
func (s *Sublist[T]) HasInterest(subject string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if r, ok := s.cache[subject]; ok {
		return !r.Empty()
	}
	if !ValidPublishSubject(subject) {
		return false
	}
	return hasInterest(s.root, subject)
}

func hasInterest[T comparable](l *level[T], subject string) bool {
	for l != nil {
		tok, rest, more := strings.Cut(subject, tsep)
		if l.fwc != nil {
			return true // nodes only stay linked while non-empty
		}
		if n := l.pwc; n != nil {
			if more && hasInterest(n.next, rest) || !more && n.hasEntries() {
				return true
			}
		}
		n := l.nodes[tok]
		if n == nil {
			return false
		}
		if !more {
			return n.hasEntries()
		}
		l, subject = n.next, rest
	}
	return false
}

// cloneWith returns a copy of r with v added (as a plain entry or to the
// named queue group). r itself is left untouched.
func (r *Result[T]) cloneWith(queue string, v T) *Result[T] {
	nr := &Result[T]{Plain: r.Plain, Queues: r.Queues}
	if queue == "" {
		nr.Plain = append(slices.Clip(r.Plain), v)
		return nr
	}
	nr.Queues = slices.Clone(r.Queues)
	if i := r.queueIndex(queue); i >= 0 {
		nr.Queues[i].Members = append(slices.Clip(r.Queues[i].Members), v)
	} else {
		nr.Queues = append(nr.Queues, Queue[T]{Name: queue, Members: []T{v}})
	}
	return nr
}

// cloneWithout returns a copy of r with one occurrence of v removed from
// the plain entries or the named queue group. r itself is left untouched.
func (r *Result[T]) cloneWithout(queue string, v T) *Result[T] {
	nr := &Result[T]{Plain: r.Plain, Queues: r.Queues}
	if queue == "" {
		nr.Plain = deleteOne(r.Plain, v)
		return nr
	}
	i := r.queueIndex(queue)
	if i < 0 {
		return nr
	}
	nr.Queues = slices.Clone(r.Queues)
	if m := deleteOne(r.Queues[i].Members, v); len(m) > 0 {
		nr.Queues[i].Members = m
	} else {
		nr.Queues = slices.Delete(nr.Queues, i, i+1)
	}
	return nr
}

// deleteOne returns a new slice holding xs minus its first v, or nil if
// that leaves nothing.
func deleteOne[T comparable](xs []T, v T) []T {
	i := slices.Index(xs, v)
	switch {
	case i < 0:
		return xs
	case len(xs) == 1:
		return nil
	}
	out := make([]T, 0, len(xs)-1)
	out = append(out, xs[:i]...)
	return append(out, xs[i+1:]...)
}
