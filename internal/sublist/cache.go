package sublist

import (
	"hash/maphash"
	"math/rand/v2"
	"strings"
	"sync/atomic"
)

// Match cache tuning.
const (
	// maxCache bounds the number of cached subjects.
	maxCache = 1024
	// sweepTo is the size the cache is cut down to once it is full, so
	// eviction cost is amortised over many misses.
	sweepTo = maxCache * 3 / 4
	// maxPatch is the largest Result patched in place of being dropped on
	// Insert/Remove; patching copies the Result, so repeatedly patching a
	// huge one would make bulk subscription quadratic.
	maxPatch = 256
)

// cacheStore caches r for subject and returns the cached Result, which is
// an existing one if another goroutine stored it first. Caller holds mu
// for writing.
func (s *Sublist[T]) cacheStore(subject string, r *Result[T]) *Result[T] {
	if old, ok := s.cache[subject]; ok {
		return old
	}
	if len(s.cache) >= maxCache {
		s.evict()
	}
	s.cache[subject] = r
	s.cold.heads.add(subject)
	return r
}

// evict drops entries until only sweepTo remain. Go map iteration starts at
// a random position, which gives cheap random eviction.
func (s *Sublist[T]) evict() {
	for k := range s.cache {
		if len(s.cache) <= sweepTo {
			return
		}
		delete(s.cache, k)
		s.cold.heads.drop(k)
	}
}

// patchCache brings every cached Result that pattern matches up to date
// after (pattern, queue, v) was inserted (add) or removed. Caller holds mu
// for writing. A literal pattern can only affect its own cache entry;
// a wildcard pattern requires a scan of the (bounded) cache, unless no
// cached subject begins with its literal tokens (cache_heads.go).
func (s *Sublist[T]) patchCache(pattern, queue string, v T, add bool) {
	if !SubjectHasWildcard(pattern) {
		if r, ok := s.cache[pattern]; ok {
			s.patchOne(pattern, r, queue, v, add)
		}
		return
	}
	// Every subject pattern matches starts with its literal tokens: a
	// string compare rules out most of the cache (a stream's direct-get
	// subscription, "$JS.API.DIRECT.GET.<stream>.>", is inserted on every
	// server at every stream create).
	lit := literalPrefix(pattern)
	if !s.cold.heads.mayHold(lit) { // no cached subject begins with its literal tokens (cache_heads.go)
		return
	}
	for subject, r := range s.cache {
		s.cold.scanned++
		if strings.HasPrefix(subject, lit) && MatchLiteral(subject, pattern) {
			s.patchOne(subject, r, queue, v, add)
		}
	}
}

// literalPrefix is pattern up to its first wildcard token, with the
// separator after the last literal token ("a.b." of "a.b.*.c"; "" when
// the first token is a wildcard).
func literalPrefix(pattern string) string {
	rest, n := pattern, 0
	for {
		tok, after, more := strings.Cut(rest, tsep)
		if tok == pwc || tok == fwc || !more {
			return pattern[:n]
		}
		n += len(tok) + len(tsep)
		rest = after
	}
}

func (s *Sublist[T]) patchOne(subject string, r *Result[T], queue string, v T, add bool) {
	switch {
	case r.Len() >= maxPatch:
		delete(s.cache, subject) // rebuilt in one go by the next Match
		s.cold.heads.drop(subject)
	case add:
		s.cache[subject] = r.cloneWith(queue, v)
	default:
		if nr := r.cloneWithout(queue, v); nr.Empty() {
			s.cache[subject] = s.empty
		} else {
			s.cache[subject] = nr
		}
	}
}

// missFilter remembers a fingerprint of recently missed subjects in a small
// direct-mapped table; a subject is admitted to the cache when its
// fingerprint is already there, i.e. on its second miss while no other
// missed subject took its slot. Subjects that keep taking each other's
// slot (a fixed cycle) are still admitted at random, one miss in
// missLottery. It needs no lock: slots are atomic and a lost race only
// delays or hastens one admission.
type missFilter struct {
	seed    maphash.Seed
	slots   *[missSlots]atomic.Uint64
	lottery uint32 // admit one other miss in lottery; 0 never
}

const (
	missSlots   = 512
	missLottery = 16
)

func newMissFilter() missFilter {
	return missFilter{seed: maphash.MakeSeed(), slots: new([missSlots]atomic.Uint64), lottery: missLottery}
}

// admit reports whether subject missed recently, and remembers it if not.
func (f missFilter) admit(subject string) bool {
	h := maphash.String(f.seed, subject)
	slot := &f.slots[h%missSlots]
	if h |= 1; slot.Load() == h { // never the empty slot's 0
		return true
	}
	slot.Store(h)
	return f.lottery > 0 && rand.Uint32()%f.lottery == 0
}
