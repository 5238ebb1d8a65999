package store

import "github.com/nats-io/nats-server/v2/internal/subjects"

// The memory store's answers to Queries (store.go).

func (ms *memStore) Bounds() (uint64, uint64) {
	ms.mu.RLock()
	defer ms.mu.RUnlock()
	return ms.first, ms.last
}

func (ms *memStore) Contains(seq uint64) bool {
	ms.mu.RLock()
	defer ms.mu.RUnlock()
	_, ok := ms.msgs[seq]
	return ok
}

func (ms *memStore) LastMatching(filters []string) uint64 {
	ms.mu.RLock()
	defer ms.mu.RUnlock()
	if f := newFilterSet(filters); !f.all {
		return lastMatchingIndex(ms.fss, f)
	}
	return ms.lastSeqLocked("")
}

func (ms *memStore) NumPending(from uint64, filters []string, lastPer bool) uint64 {
	ms.mu.RLock()
	defer ms.mu.RUnlock()
	from = max(from, ms.first)
	if len(ms.msgs) == 0 || from > ms.last {
		return 0
	}
	f := newFilterSet(filters)
	if f.all && !lastPer {
		return ms.liveFrom(from)
	}
	n, part, compl := splitTails(ms.fss, from, f, lastPer)
	n += ms.tailCount(&part, from)
	if compl {
		return ms.liveFrom(from) - n
	}
	return n
}

// tailCount counts the messages >= from of the subjects of part.
func (ms *memStore) tailCount(part *tails, from uint64) uint64 {
	// Walking the subjects' chains from their nearer ends costs about half
	// their messages, a scan the shorter side of from.
	if len(part.set) <= 1 || part.total/2 <= min(part.hi-from, from-part.lo) {
		var n uint64
		for _, ss := range part.set {
			n += ms.chainFrom(ss, from)
		}
		return n
	}
	return part.count(from, func(lo, hi uint64) uint64 {
		var c uint64
		for s := lo; s <= hi; s++ {
			if m, ok := ms.msgs[s]; ok {
				if _, in := part.set[m.subj]; in {
					c++
				}
			}
		}
		return c
	})
}

// liveFrom counts the live messages >= from (first < from <= last),
// looking at whichever side of from is shorter.
func (ms *memStore) liveFrom(from uint64) uint64 {
	above := ms.last - from + 1
	switch {
	case from == ms.first:
		return uint64(len(ms.msgs))
	case uint64(len(ms.msgs)) == ms.last-ms.first+1:
		return above // nothing removed in between
	}
	lo, hi := from, ms.last
	if above > from-ms.first {
		lo, hi = ms.first, from-1
	}
	var c uint64
	for s := lo; s <= hi; s++ {
		if _, ok := ms.msgs[s]; ok {
			c++
		}
	}
	if lo == from {
		return c
	}
	return uint64(len(ms.msgs)) - c
}

// chainFrom counts a subject's messages >= from (ss.First < from <=
// ss.Last) along its chain, from whichever end is nearer by sequence.
func (ms *memStore) chainFrom(ss subjects.State, from uint64) uint64 {
	var c uint64
	if ss.Last-from <= from-ss.First {
		for s := ss.Last; s >= from && s != 0; s = ms.msgs[s].prev {
			c++
		}
		return c
	}
	for s := ss.First; s < from && s != 0; s = ms.msgs[s].next {
		c++
	}
	return ss.Msgs - c
}

func (ms *memStore) SeqAtTime(ts int64) uint64 {
	ms.mu.RLock()
	defer ms.mu.RUnlock()
	if ms.tsUnordered {
		for s := ms.first; s <= ms.last; s++ {
			if m, ok := ms.msgs[s]; ok && m.ts >= ts {
				return s
			}
		}
		return ms.last + 1
	}
	// Live timestamps grow with the sequence: the answer is the first
	// sequence s whose next live message (if any) is at or after ts.
	lo, hi := ms.first, ms.last+1
	for lo < hi {
		mid := lo + (hi-lo)/2
		if s := ms.nextLiveFrom(mid); s > ms.last || ms.msgs[s].ts >= ts {
			hi = mid
		} else {
			lo = s + 1
		}
	}
	return ms.nextLiveFrom(lo)
}

// nextLiveFrom is the first live sequence >= s, last+1 when none.
func (ms *memStore) nextLiveFrom(s uint64) uint64 {
	for ; s <= ms.last; s++ {
		if _, ok := ms.msgs[s]; ok {
			return s
		}
	}
	return ms.last + 1
}
