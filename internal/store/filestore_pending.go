package store

import "github.com/nats-io/nats-server/v2/internal/subjects"

// The file store's answers to Queries (store.go): from the block counters
// and deletion bitmaps, the per-subject state and the blocks' subject
// indexes.

func (fs *fileStore) Bounds() (uint64, uint64) {
	fs.mu.Lock()
	defer fs.unlock()
	return fs.seqs.first, fs.seqs.last
}

func (fs *fileStore) Contains(seq uint64) bool {
	fs.mu.Lock()
	defer fs.unlock()
	b := fs.findBlock(seq)
	return b != nil && b.live(seq)
}

func (fs *fileStore) LastMatching(filters []string) uint64 {
	fs.mu.Lock()
	defer fs.unlock()
	fs.fixSubjects()
	if f := newFilterSet(filters); !f.all {
		return lastMatchingIndex(fs.fss, f)
	}
	return fs.lastSeqLocked("")
}

func (fs *fileStore) NumPending(from uint64, filters []string, lastPer bool) uint64 {
	fs.mu.Lock()
	defer fs.unlock()
	if fs.closed {
		return 0
	}
	fs.fixSubjects()
	defer fs.fixSubjects()
	from = max(from, fs.seqs.first)
	if fs.seqs.msgs == 0 || from > fs.seqs.last {
		return 0
	}
	f := newFilterSet(filters)
	if f.all && !lastPer {
		return fs.countFrom(from).Msgs
	}
	n, part, compl := splitTails(fs.fss, from, f, lastPer)
	n += part.count(from, func(lo, hi uint64) uint64 { return fs.countSubjects(part.set, lo, hi) })
	if compl {
		return fs.countFrom(from).Msgs - n
	}
	return n
}

// countSubjects counts the live messages in [lo, hi] on the subjects of
// set, block by block: by their posting lists when set is the smaller,
// else by the subject ids of every message.
func (fs *fileStore) countSubjects(set map[string]subjects.State, lo, hi uint64) uint64 {
	var c uint64
	count := func(uint64) bool { c++; return true }
	m := &subjectMatcher{wild: true, set: set}
	// Blocks are looked up by sequence at each step: loading an index may
	// drop damaged blocks from fs.blocks.
	for next := lo; next <= hi; {
		i := fs.blockFrom(next)
		if i >= len(fs.blocks) || fs.blocks[i].first > hi {
			break
		}
		b := fs.blocks[i]
		if b.first == 0 || b.msgs == 0 {
			next = b.maxSeq() + 1
			continue
		}
		x := fs.blockIdx(b)
		if x == nil || b.msgs == 0 {
			next = b.last + 1
			continue
		}
		from, to := max(next, b.first)-b.first, min(hi, b.last)-b.first
		if len(set) < len(x.subjs) {
			for subj, ss := range set {
				if ss.Last >= b.first && ss.First <= b.last {
					eachPosting(b, x, subj, from, to, count)
				}
			}
		} else {
			eachMatchingID(b, x, m, from, to, count)
		}
		next = b.last + 1
	}
	return c
}

// SeqAtTime skips every block whose messages all came before ts (by its
// largest timestamp, kept in memory) and searches the first block that may
// hold the answer: by bisection when its timestamps are known to grow,
// else reading its live messages in order (and learning whether they
// grow). Blocks after it are searched only when it holds no answer (its
// largest timestamp was a removed message's, or timestamps went back).
func (fs *fileStore) SeqAtTime(ts int64) uint64 {
	fs.mu.Lock()
	defer fs.unlock()
	if fs.closed {
		return fs.seqs.last + 1
	}
	defer fs.fixSubjects()
	// Blocks are looked up by sequence at each step: reading a record may
	// drop a damaged block from fs.blocks.
	for next := fs.seqs.first; next <= fs.seqs.last; {
		i := fs.blockFrom(next)
		if i >= len(fs.blocks) {
			break
		}
		b := fs.blocks[i]
		if b.first == 0 || b.msgs == 0 || b.maxTS < ts {
			next = b.maxSeq() + 1
			continue
		}
		start := max(next, b.first) - b.first
		if b.tsOrder == tsOrdered {
			if seq, ok := fs.bisectTime(b, start, ts); ok {
				return seq
			}
		} else if seq := fs.scanTime(b, start, ts); seq != 0 {
			return seq
		}
		next = b.last + 1
	}
	return fs.seqs.last + 1
}

// scanTime is the first live message of b at offset >= start with a
// timestamp >= ts (0: none). Reading the whole block, it finds whether
// its timestamps grow.
func (fs *fileStore) scanTime(b *msgBlock, start uint64, ts int64) uint64 {
	var found uint64
	whole, ordered, seen, prev := start == 0 && b.tsOrder == tsUnknown, true, false, int64(0)
	for j := b.dels.nextClear(start); j <= b.last-b.first && j < b.dels.n; j = b.dels.nextClear(j + 1) {
		t, ok := fs.msgTS(b.first + j)
		if !ok {
			whole = false
			continue
		}
		if found == 0 && t >= ts {
			found = b.first + j
			if !whole {
				return found
			}
		}
		ordered = ordered && (!seen || t >= prev)
		seen, prev = true, t
	}
	if whole {
		b.tsOrder = tsUnordered
		if ordered {
			b.tsOrder = tsOrdered
		}
	}
	return found
}

// bisectTime is scanTime for a block whose live timestamps grow; false
// when a record could not be read (the caller then goes on past b).
func (fs *fileStore) bisectTime(b *msgBlock, start uint64, ts int64) (uint64, bool) {
	end := b.last - b.first + 1
	lo, hi := start, end
	for lo < hi {
		mid := lo + (hi-lo)/2
		j := b.dels.nextClear(mid)
		if j >= end || j >= b.dels.n {
			hi = mid
			continue
		}
		t, ok := fs.msgTS(b.first + j)
		switch {
		case !ok:
			seq := fs.scanTime(b, start, ts)
			return seq, seq != 0
		case t >= ts:
			hi = mid
		default:
			lo = j + 1
		}
	}
	if j := b.dels.nextClear(lo); j < end && j < b.dels.n {
		return b.first + j, true
	}
	return 0, false
}
