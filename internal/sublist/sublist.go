// Package sublist implements the NATS subject routing table: a trie of
// subject tokens mapping subscription patterns (with "*" and ">"
// wildcards and optional queue groups) to caller-supplied values, with a
// bounded cache of match results for the publish hot path.
//
// # Locking
//
// Each Sublist is guarded by exactly one RWMutex, mu (internal/lockorder:
// a sync.RWMutex whose order is checked under -race). It protects the
// trie, the match caches, the generation counter and the insert/remove
// counters; nothing else is shared except the atomic hit/miss counters.
//
//   - Insert and Remove hold mu for writing. They change the trie, bump
//     the generation and patch every cached Result the changed pattern
//     matches (copy-on-write: a published Result is never mutated).
//   - Match holds mu for reading to look up the cache; a hit returns the
//     cached *Result with no allocation. On a miss the result is computed
//     under the read lock; mu is then taken for writing just long enough to
//     store it, and only if the generation is unchanged, i.e. no Insert or
//     Remove slipped in between (otherwise the result is returned uncached).
//     A subject is cached on its second miss in a short while, not its
//     first: subjects used once (reply inboxes, per-message subjects) would
//     otherwise cost a write lock, a copy of the subject and an eviction
//     each, and push out the subjects that repeat. A Result that does not
//     depend on the subject's last token is cached under the subject
//     without it instead (prefix.go), tagged with the generation; such
//     entries are never patched, a stale one is just not used.
//   - Count, Stats, All and HasInterest hold mu for reading.
//
// Results handed out by Match are shared and immutable: callers must not
// modify them or their slices.
package sublist

import (
	"errors"
	"github.com/nats-io/nats-server/v2/internal/lockorder"
	"strings"
	"sync/atomic"
)

var (
	// ErrInvalidSubject is returned for a malformed subject.
	ErrInvalidSubject = errors.New("sublist: invalid subject")
	// ErrInvalidQueue is returned for a malformed queue group name.
	ErrInvalidQueue = errors.New("sublist: invalid queue group name")
	// ErrNotFound is returned by Remove when the entry does not exist.
	ErrNotFound = errors.New("sublist: entry not found")
)

// Sublist maps subject patterns to values of type T. T is typically a
// pointer to a subscription; values are compared with ==, so an interface
// type T must only ever hold comparable dynamic values.
type Sublist[T comparable] struct {
	// The fields touched by a cache hit (mu, hits, cache) come first so
	// they share one cache line; a hit then bounces only that line
	// between cores.
	mu     lockorder.RWMutex[lockorder.Sublist]
	hits   atomic.Uint64 // Match calls served from the cache
	cache  map[string]*Result[T]
	misses atomic.Uint64 // all other Match calls
	root   *level[T]
	empty  *Result[T] // shared result for "no interest"
	gen    uint64     // bumped by every successful Insert/Remove
	// cold is what only writers (Insert, Remove, cache stores) and Stats
	// touch, kept aside so the Sublist stays 128 bytes.
	cold  *coldState
	count uint32
	// Pad to 128 bytes: the allocator then places a Sublist at a 128-byte
	// boundary, so the leading hot fields really do share one cache line.
	_ [12]byte
	// seen admits a subject to the cache on its second miss (see admit).
	seen missFilter
	// prefix caches Results that do not depend on a subject's last token,
	// under the subject without it (prefix.go). Guarded by mu.
	prefix map[string]prefixEntry[T]
}

// coldState is a Sublist's state that only writers and Stats touch
// (guarded by its mu).
type coldState struct {
	inserts uint64
	removes uint64
	// heads counts the cached subjects by their leading tokens, so that a
	// wildcard insert or remove that can match none of them skips the
	// scan (cache_heads.go); scanned counts the cached subjects such
	// scans looked at (tests).
	heads   cacheHeads
	scanned uint64
}

// Result is the set of entries matching a literal subject. Plain holds
// entries without a queue group; Queues holds one element per distinct
// queue group name. A value stored under several matching patterns appears
// once per pattern. Results are shared and must be treated as read-only.
type Result[T comparable] struct {
	Plain  []T
	Queues []Queue[T]
}

// Queue is a queue group within a Result: every matching member of the
// group, of which the server delivers to one.
type Queue[T comparable] struct {
	Name    string
	Members []T
}

// Entry is one (subject, queue, value) triple stored in a Sublist.
type Entry[T comparable] struct {
	Subject string
	Queue   string
	Value   T
}

// Stats is a snapshot of Sublist counters. Fan-out figures are computed
// over the cached results, counting each queue group as one delivery.
type Stats struct {
	NumSubs      uint32
	NumCache     uint32
	NumInserts   uint64
	NumRemoves   uint64
	NumMatches   uint64
	CacheHitRate float64
	MaxFanout    uint32
	AvgFanout    float64
}

// level is one token position of the trie.
type level[T comparable] struct {
	nodes map[string]*node[T] // literal tokens
	pwc   *node[T]            // "*" token
	fwc   *node[T]            // ">" token (never has a next level)
}

// node holds the entries whose pattern ends at this token, and the level
// for the following token.
type node[T comparable] struct {
	next   *level[T]
	plain  set[T]
	queues *groups[T] // nil when the node has no queue entries
	// solo is the Result of a subject whose only matching node is this
	// one, built on the first such miss (under the read lock, hence
	// atomic) and dropped when the node's entries change. Subjects seen
	// once (reply inboxes, fresh subjects under one wildcard) then share
	// it instead of each allocating a copy.
	solo atomic.Pointer[Result[T]]
}

// New returns an empty Sublist.
func New[T comparable]() *Sublist[T] {
	return &Sublist[T]{
		root:   &level[T]{},
		cache:  make(map[string]*Result[T]),
		prefix: make(map[string]prefixEntry[T]),
		cold:   &coldState{heads: cacheHeads{}},
		empty:  &Result[T]{},
		seen:   newMissFilter(),
	}
}

// Insert adds v under subject, which may contain wildcards, in queue group
// queue ("" for none). Inserting an entry that is already present is a
// no-op. It returns ErrInvalidSubject or ErrInvalidQueue for bad input.
func (s *Sublist[T]) Insert(subject, queue string, v T) error {
	if !ValidSubject(subject) {
		return ErrInvalidSubject
	}
	if queue != "" && !ValidQueueName(queue) {
		return ErrInvalidQueue
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.root.nodeFor(subject).add(queue, v) {
		return nil
	}
	s.count++
	s.cold.inserts++
	s.gen++
	s.patchCache(subject, queue, v, true)
	return nil
}

// step records one hop of a trie walk so Remove can prune bottom-up.
type step[T comparable] struct {
	l   *level[T]
	tok string
	n   *node[T]
}

// Remove deletes the entry (subject, queue, v). It returns ErrNotFound if
// no such entry exists. Trie nodes left empty are released.
func (s *Sublist[T]) Remove(subject, queue string, v T) error {
	if !ValidSubject(subject) {
		return ErrInvalidSubject
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var buf [16]step[T]
	path := buf[:0]
	l := s.root
	for rest, more := subject, true; more; {
		var tok string
		tok, rest, more = strings.Cut(rest, tsep)
		n := l.child(tok)
		if n == nil {
			return ErrNotFound
		}
		path = append(path, step[T]{l, tok, n})
		if l = n.next; l == nil && more {
			return ErrNotFound
		}
	}
	if !path[len(path)-1].n.remove(queue, v) {
		return ErrNotFound
	}
	prune(path)
	s.count--
	s.cold.removes++
	s.gen++
	s.patchCache(subject, queue, v, false)
	return nil
}

// prune walks a Remove path bottom-up, unlinking nodes and levels that no
// longer hold anything.
func prune[T comparable](path []step[T]) {
	for i := len(path) - 1; i >= 0; i-- {
		st := path[i]
		if st.n.next != nil && st.n.next.isEmpty() {
			st.n.next = nil
		}
		if !st.n.isEmpty() {
			return
		}
		st.l.unlink(st.tok)
	}
}

// Count returns the number of entries.
func (s *Sublist[T]) Count() uint32 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.count
}

// Stats returns a snapshot of the Sublist counters.
func (s *Sublist[T]) Stats() Stats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := Stats{
		NumSubs:    s.count,
		NumCache:   uint32(len(s.cache)),
		NumInserts: s.cold.inserts,
		NumRemoves: s.cold.removes,
		NumMatches: s.hits.Load() + s.misses.Load(),
	}
	if st.NumMatches > 0 {
		st.CacheHitRate = float64(s.hits.Load()) / float64(st.NumMatches)
	}
	var total uint64
	for _, r := range s.cache {
		f := uint32(len(r.Plain) + len(r.Queues))
		total += uint64(f)
		st.MaxFanout = max(st.MaxFanout, f)
	}
	if len(s.cache) > 0 {
		st.AvgFanout = float64(total) / float64(len(s.cache))
	}
	return st
}

// All returns every entry, in no particular order.
func (s *Sublist[T]) All() []Entry[T] {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return appendLevel(make([]Entry[T], 0, s.count), s.root, "")
}

func appendLevel[T comparable](out []Entry[T], l *level[T], prefix string) []Entry[T] {
	if l == nil {
		return out
	}
	join := func(tok string) string {
		if prefix == "" {
			return tok
		}
		return prefix + tsep + tok
	}
	for tok, n := range l.nodes {
		out = appendNode(out, n, join(tok))
	}
	if l.pwc != nil {
		out = appendNode(out, l.pwc, join(pwc))
	}
	if l.fwc != nil {
		out = appendNode(out, l.fwc, join(fwc))
	}
	return out
}

func appendNode[T comparable](out []Entry[T], n *node[T], subject string) []Entry[T] {
	for _, v := range n.plain.items {
		out = append(out, Entry[T]{Subject: subject, Value: v})
	}
	if g := n.queues; g != nil {
		for i, q := range g.names.items {
			for _, v := range g.members[i].items {
				out = append(out, Entry[T]{Subject: subject, Queue: q, Value: v})
			}
		}
	}
	return appendLevel(out, n.next, subject)
}

// child returns the node for token tok, or nil.
func (l *level[T]) child(tok string) *node[T] {
	switch tok {
	case pwc:
		return l.pwc
	case fwc:
		return l.fwc
	}
	return l.nodes[tok]
}

// nodeFor returns the node for subject, creating missing nodes and levels.
func (l *level[T]) nodeFor(subject string) *node[T] {
	for {
		tok, rest, more := strings.Cut(subject, tsep)
		n := l.child(tok)
		if n == nil {
			n = &node[T]{}
			l.link(tok, n)
		}
		if !more {
			return n
		}
		if n.next == nil {
			n.next = &level[T]{}
		}
		l, subject = n.next, rest
	}
}

func (l *level[T]) link(tok string, n *node[T]) {
	switch tok {
	case pwc:
		l.pwc = n
	case fwc:
		l.fwc = n
	default:
		if l.nodes == nil {
			l.nodes = make(map[string]*node[T])
		}
		// Clone so the key does not pin the caller's whole subject.
		l.nodes[strings.Clone(tok)] = n
	}
}

func (l *level[T]) unlink(tok string) {
	switch tok {
	case pwc:
		l.pwc = nil
	case fwc:
		l.fwc = nil
	default:
		delete(l.nodes, tok)
		if len(l.nodes) == 0 {
			l.nodes = nil
		}
	}
}

func (l *level[T]) isEmpty() bool {
	return len(l.nodes) == 0 && l.pwc == nil && l.fwc == nil
}

func (n *node[T]) hasEntries() bool {
	return n.plain.len() > 0 || n.queues != nil
}

func (n *node[T]) isEmpty() bool {
	return n.next == nil && !n.hasEntries()
}

// add stores v in the plain set or the named queue group.
func (n *node[T]) add(queue string, v T) bool {
	n.solo.Store(nil)
	if queue == "" {
		return n.plain.add(v)
	}
	if n.queues == nil {
		n.queues = &groups[T]{}
	}
	return n.queues.add(queue, v)
}

func (n *node[T]) remove(queue string, v T) bool {
	n.solo.Store(nil)
	if queue == "" {
		return n.plain.remove(v)
	}
	if n.queues == nil || !n.queues.remove(queue, v) {
		return false
	}
	if n.queues.len() == 0 {
		n.queues = nil
	}
	return true
}
