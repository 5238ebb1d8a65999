package store

import "sort"

// forEachMatch calls fn, in ascending order, for every live sequence in
// [lo, hi] whose subject matches m, until fn returns false. Literal
// subjects use the per-block posting lists, others scan the subject ids.
func (fs *fileStore) forEachMatch(m *subjectMatcher, lo, hi uint64, fn func(seq uint64) bool) {
	// Blocks are looked up by sequence at each step: loading an index may
	// drop damaged blocks from fs.blocks.
	for next := lo; next <= hi; {
		i := fs.blockFrom(next)
		if i >= len(fs.blocks) {
			return
		}
		b := fs.blocks[i]
		if b.first > hi {
			return
		}
		if b.first == 0 || b.msgs == 0 {
			next = b.maxSeq() + 1
			continue
		}
		var x *blockIndex
		if !m.all {
			if x = fs.blockIdx(b); x == nil || b.msgs == 0 {
				next = b.last + 1
				continue
			}
		}
		from, to := max(next, b.first)-b.first, min(hi, b.last)-b.first
		var more bool
		switch {
		case m.all:
			more = eachLive(b, from, to, fn)
		case !m.wild:
			more = eachPosting(b, x, m.filter, from, to, fn)
		default:
			more = eachMatchingID(b, x, m, from, to, fn)
		}
		if !more {
			return
		}
		next = b.last + 1
	}
}

func eachLive(b *msgBlock, from, to uint64, fn func(uint64) bool) bool {
	for i := b.dels.nextClear(from); i <= to && i < b.dels.n; i = b.dels.nextClear(i + 1) {
		if !fn(b.first + i) {
			return false
		}
	}
	return true
}

func eachPosting(b *msgBlock, x *blockIndex, subj string, from, to uint64, fn func(uint64) bool) bool {
	id, ok := x.lookup(subj)
	if !ok {
		return true
	}
	p := x.posts[id]
	for k := sort.Search(len(p), func(k int) bool { return uint64(p[k]) >= from }); k < len(p) && uint64(p[k]) <= to; k++ {
		if !b.dels.has(uint64(p[k])) && !fn(b.first+uint64(p[k])) {
			return false
		}
	}
	return true
}

func eachMatchingID(b *msgBlock, x *blockIndex, m *subjectMatcher, from, to uint64, fn func(uint64) bool) bool {
	matches := make([]bool, len(x.subjs))
	any := false
	for id, s := range x.subjs {
		matches[id] = m.match(s)
		any = any || matches[id]
	}
	if !any {
		return true
	}
	for i := b.dels.nextClear(from); i <= to && i < b.dels.n; i = b.dels.nextClear(i + 1) {
		if i < uint64(len(x.ids)) && x.ids[i] != noID && matches[x.ids[i]] && !fn(b.first+i) {
			return false
		}
	}
	return true
}

// matching lists the live sequences matching subject (all when ""), below
// seq when seq > 0.
func (fs *fileStore) matching(subject string, seq uint64) []uint64 {
	hi := fs.seqs.last
	if seq > 0 {
		if seq == 1 {
			return nil
		}
		hi = min(hi, seq-1)
	}
	var out []uint64
	fs.forEachMatch(newSubjectMatcher(subject), fs.seqs.first, hi, func(s uint64) bool {
		out = append(out, s)
		return true
	})
	return out
}

// nextForSubject is the first live sequence >= from on subj (0: none).
func (fs *fileStore) nextForSubject(subj string, from uint64) uint64 {
	for from <= fs.seqs.last {
		i := fs.blockFrom(from)
		if i >= len(fs.blocks) {
			return 0
		}
		b := fs.blocks[i]
		if b.first == 0 || b.msgs == 0 {
			from = b.maxSeq() + 1
			continue
		}
		if x := fs.blockIdx(b); x != nil && b.msgs > 0 {
			if id, ok := x.lookup(subj); ok {
				p := x.posts[id]
				start := max(from, b.first) - b.first
				for k := sort.Search(len(p), func(k int) bool { return uint64(p[k]) >= start }); k < len(p); k++ {
					if !b.dels.has(uint64(p[k])) {
						return b.first + uint64(p[k])
					}
				}
			}
		}
		from = b.last + 1
	}
	return 0
}

// prevForSubject is the last live sequence <= from on subj (0: none).
func (fs *fileStore) prevForSubject(subj string, from uint64) uint64 {
	i := fs.blockFrom(from)
	if i >= len(fs.blocks) {
		i = len(fs.blocks) - 1
	}
	for ; i >= 0; i-- {
		b := fs.blocks[i]
		if b.first == 0 || b.msgs == 0 || b.first > from {
			continue
		}
		x := fs.blockIdx(b)
		if x == nil {
			continue
		}
		id, ok := x.lookup(subj)
		if !ok {
			continue
		}
		p := x.posts[id]
		top := min(from, b.last) - b.first
		for k := sort.Search(len(p), func(k int) bool { return uint64(p[k]) > top }) - 1; k >= 0; k-- {
			if !b.dels.has(uint64(p[k])) {
				return b.first + uint64(p[k])
			}
		}
	}
	return 0
}

func (fs *fileStore) LoadNextMsg(filter string, start uint64, sm *StoreMsg) (*StoreMsg, error) {
	fs.mu.Lock()
	defer fs.unlock()
	if fs.closed {
		return nil, ErrStoreClosed
	}
	defer fs.fixSubjects()
	m := newSubjectMatcher(filter)
	start = max(start, fs.seqs.first)
	if !m.all && !m.wild {
		ss, ok := fs.fss.Get(filter)
		if !ok || ss.Last < start {
			return nil, ErrStoreEOF
		}
		start = max(start, ss.First)
	}
	for start <= fs.seqs.last {
		found := fs.nextMatch(m, start)
		if found == 0 {
			break
		}
		sm2, err := fs.loadLocked(found, sm)
		if err == nil {
			return sm2, nil
		}
		start = found + 1 // damaged and dropped while loading: go on
	}
	return nil, ErrStoreEOF
}

func (fs *fileStore) FilteredState(seq uint64, subject string) SimpleState {
	fs.mu.Lock()
	defer fs.unlock()
	defer fs.fixSubjects()
	m := newSubjectMatcher(subject)
	if !m.all && !m.wild {
		if ss, ok := fs.fss.Get(subject); !ok || ss.Last < seq {
			return SimpleState{}
		} else if seq <= ss.First {
			return SimpleState(ss)
		}
	}
	if m.all {
		return fs.countFrom(seq)
	}
	var st SimpleState
	fs.forEachMatch(m, max(seq, fs.seqs.first), fs.seqs.last, func(s uint64) bool {
		if st.Msgs == 0 {
			st.First = s
		}
		st.Msgs++
		st.Last = s
		return true
	})
	return st
}

// countFrom is the state of every live message at or after seq, counted
// from the block counters (only the block holding seq is scanned).
func (fs *fileStore) countFrom(seq uint64) SimpleState {
	seq = max(seq, fs.seqs.first)
	if fs.seqs.msgs == 0 || seq > fs.seqs.last {
		return SimpleState{}
	}
	st := SimpleState{First: fs.nextLive(seq), Last: fs.lastLive()}
	if st.First > st.Last {
		return SimpleState{}
	}
	for i := fs.blockFrom(seq); i < len(fs.blocks); i++ {
		b := fs.blocks[i]
		if b.first >= seq || b.first == 0 {
			st.Msgs += b.msgs
			continue
		}
		st.Msgs += b.dels.clearFrom(seq - b.first)
	}
	return st
}

// nextMatch is the first live sequence >= start matching m (0: none).
func (fs *fileStore) nextMatch(m *subjectMatcher, start uint64) uint64 {
	switch {
	case m.all:
		if s := fs.nextLive(start); s <= fs.seqs.last {
			return s
		}
		return 0
	case !m.wild:
		return fs.nextForSubject(m.filter, start)
	}
	var found uint64
	fs.forEachMatch(m, start, fs.seqs.last, func(s uint64) bool {
		found = s
		return false
	})
	return found
}
