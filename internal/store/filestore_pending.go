package store

import "github.com/nats-io/nats-server/v2/internal/subjects"

// The file store's answers to Queries (store.go): from the block counters
// and deletion bitmaps, the per-subject state and the blocks' subject
// indexes.

func (fs *fileStore) Bounds() (uint64, uint64) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.seqs.first, fs.seqs.last
}

func (fs *fileStore) Contains(seq uint64) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	b := fs.findBlock(seq)
	return b != nil && b.live(seq)
}

func (fs *fileStore) LastMatching(filters []string) uint64 {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.fixSubjects()
	if f := newFilterSet(filters); !f.all {
		return lastMatchingIndex(fs.fss, f)
	}
	return fs.lastSeqLocked("")
}

func (fs *fileStore) NumPending(from uint64, filters []string, lastPer bool) uint64 {
	fs.mu.Lock()
	defer fs.mu.Unlock()
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
// largest timestamp, kept in memory) and reads the live messages of the
// first block that may hold the answer: one block when timestamps grow
// with the sequence, every candidate block in order when they do not.
func (fs *fileStore) SeqAtTime(ts int64) uint64 {
	fs.mu.Lock()
	defer fs.mu.Unlock()
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
		for j := b.dels.nextClear(max(next, b.first) - b.first); j <= b.last-b.first && j < b.dels.n; j = b.dels.nextClear(j + 1) {
			if t, ok := fs.msgTS(b.first + j); ok && t >= ts {
				return b.first + j
			}
		}
		next = b.last + 1
	}
	return fs.seqs.last + 1
}
