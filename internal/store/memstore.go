package store

import (
	"github.com/nats-io/nats-server/v2/internal/lockorder"
	"slices"
	"sort"
	"time"

	"github.com/nats-io/nats-server/v2/internal/subjects"
	"github.com/nats-io/nats-server/v2/internal/sublist"
)

// StoredMsgSize is the accounted size of a message, the same in every store.
func StoredMsgSize(subj string, hdr, msg []byte) uint64 {
	return uint64(30 + len(subj) + len(hdr) + len(msg))
}

type memMsg struct {
	subj string
	hdr  []byte
	msg  []byte
	ts   int64
	// prev and next are the sequences of the messages before and after
	// this one under the same subject (0: none). Removing a subject's
	// first or last message then finds its new bound at once, where a
	// scan would step over every other subject's messages in between.
	prev, next uint64
}

// memStore is the in-memory StreamStore.
type memStore struct {
	mu     lockorder.RWMutex[lockorder.MemStore]
	msgs   map[uint64]*memMsg
	first  uint64 // first sequence (may be a deleted slot until trimmed)
	last   uint64
	bytes  uint64
	fss    *subjects.Table
	limits StoreLimits
	closed bool
	// maxTS is the largest timestamp stored so far; tsUnordered is set
	// once a message came with a smaller one (SeqAtTime then scans).
	maxTS       int64
	tsUnordered bool
	// watcher, when set, sees every message before it is removed.
	watcher RemovalWatcher
	// werr is set by a panic under mu (memstore_lock.go): the store is
	// read-only from then on.
	werr error
}

func newMemStore(limits StoreLimits) *memStore {
	return &memStore{msgs: map[uint64]*memMsg{}, fss: subjects.New(), first: 1, limits: limits}
}

func (ms *memStore) StoreMsg(subj string, hdr, msg []byte, ts int64) (uint64, error) {
	ms.mu.Lock()
	defer ms.unlock()
	if err := ms.writable(); err != nil {
		return 0, err
	}
	ms.last++
	seq := ms.last
	m := &memMsg{subj: subj, ts: ts}
	ms.tsUnordered = ms.tsUnordered || ts < ms.maxTS
	ms.maxTS = max(ms.maxTS, ts)
	if len(hdr) > 0 {
		m.hdr = append([]byte(nil), hdr...)
	}
	m.msg = append([]byte(nil), msg...)
	ms.msgs[seq] = m
	ms.bytes += StoredMsgSize(subj, hdr, msg)
	if before, ok := ms.fss.Add(subj, seq); ok {
		m.prev = before.Last
		ms.msgs[before.Last].next = seq
	}
	ms.enforceLimitsLocked(subj)
	return seq, nil
}

// enforceLimitsLocked discards from the front until the limits hold.
func (ms *memStore) enforceLimitsLocked(subj string) {
	if max := ms.limits.MaxMsgsPerSubject; max > 0 {
		for {
			ss, ok := ms.fss.Get(subj)
			if !ok || ss.Msgs <= uint64(max) {
				break
			}
			ms.removeLocked(ss.First, false)
		}
	}
	if max := ms.limits.MaxMsgs; max > 0 {
		for uint64(len(ms.msgs)) > uint64(max) {
			ms.removeLocked(ms.firstLiveLocked(), false)
		}
	}
	if max := ms.limits.MaxBytes; max > 0 {
		for ms.bytes > uint64(max) && len(ms.msgs) > 0 {
			ms.removeLocked(ms.firstLiveLocked(), false)
		}
	}
}

func (ms *memStore) firstLiveLocked() uint64 {
	for seq := ms.first; seq <= ms.last; seq++ {
		if _, ok := ms.msgs[seq]; ok {
			ms.first = seq
			return seq
		}
	}
	ms.first = ms.last + 1
	return 0
}

// removeLocked deletes seq; it reports whether it existed.
func (ms *memStore) removeLocked(seq uint64, erase bool) bool {
	m, ok := ms.msgs[seq]
	if !ok {
		return false
	}
	if ms.watcher != nil {
		tellRemoval(ms.watcher, seq, func(sm *StoreMsg) (*StoreMsg, error) {
			sm.copyFrom(m.subj, m.hdr, m.msg, seq, m.ts)
			return sm, nil
		})
	}
	if erase {
		clear(m.msg)
		clear(m.hdr)
	}
	delete(ms.msgs, seq)
	ms.bytes -= StoredMsgSize(m.subj, m.hdr, m.msg)
	if m.prev != 0 {
		ms.msgs[m.prev].next = m.next
	}
	if m.next != 0 {
		ms.msgs[m.next].prev = m.prev
	}
	ms.removeSubjectLocked(m, seq)
	if seq == ms.first {
		ms.firstLiveLocked()
	}
	return true
}

// removeSubjectLocked updates the per-subject state for the removal of
// m, stored at seq (every stored message counts under its subject, and
// m's links name its neighbours under it).
func (ms *memStore) removeSubjectLocked(m *memMsg, seq uint64) {
	ss, ok := ms.fss.Get(m.subj)
	if !ok {
		return
	}
	ss.Msgs--
	if ss.Msgs == 0 {
		ms.fss.Delete(m.subj)
		return
	}
	if seq == ss.First {
		ss.First = m.next
	}
	if seq == ss.Last {
		ss.Last = m.prev
	}
	ms.fss.Put(m.subj, ss)
}

func (ms *memStore) SkipMsgs(n uint64) error {
	ms.mu.Lock()
	defer ms.unlock()
	if err := ms.werr; err != nil {
		return err
	}
	ms.last += n
	if len(ms.msgs) == 0 {
		ms.first = ms.last + 1
	}
	return nil
}

func (ms *memStore) LoadMsg(seq uint64, sm *StoreMsg) (*StoreMsg, error) {
	ms.mu.RLock()
	defer ms.mu.RUnlock()
	m, ok := ms.msgs[seq]
	if !ok {
		if seq > ms.last {
			return nil, ErrStoreEOF
		}
		return nil, ErrStoreMsgNotFound
	}
	if sm == nil {
		sm = &StoreMsg{}
	}
	sm.copyFrom(m.subj, m.hdr, m.msg, seq, m.ts)
	return sm, nil
}

func (ms *memStore) LastSeqForSubject(filter string) uint64 {
	ms.mu.RLock()
	defer ms.mu.RUnlock()
	return ms.lastSeqLocked(filter)
}

func (ms *memStore) lastSeqLocked(filter string) uint64 {
	if filter == "" || filter == ">" {
		for seq := ms.last; seq >= ms.first && seq > 0; seq-- {
			if _, ok := ms.msgs[seq]; ok {
				return seq
			}
		}
		return 0
	}
	return lastInIndex(ms.fss, filter)
}

func (ms *memStore) LoadLastMsg(filter string, sm *StoreMsg) (*StoreMsg, error) {
	seq := ms.LastSeqForSubject(filter) // a deferred unlock (memstore_lock.go)
	if seq == 0 {
		return nil, ErrStoreMsgNotFound
	}
	return ms.LoadMsg(seq, sm)
}

func (ms *memStore) LoadNextMsg(filter string, start uint64, sm *StoreMsg) (*StoreMsg, error) {
	ms.mu.RLock()
	defer ms.mu.RUnlock()
	start = max(start, ms.first)
	all := filter == "" || filter == ">"
	wild := sublist.SubjectHasWildcard(filter)
	if !all && !wild {
		ss, ok := ms.fss.Get(filter)
		if !ok || ss.Last < start {
			return nil, ErrStoreEOF
		}
		start = max(start, ss.First)
		// A reader going through the subject asks for the message after
		// one it read: that one's link names it.
		if p, ok := ms.msgs[start-1]; ok && p.subj == filter {
			start = p.next
		}
	}
	for seq := start; seq <= ms.last; seq++ {
		m, ok := ms.msgs[seq]
		if !ok || !(all || m.subj == filter || wild && sublist.MatchLiteral(m.subj, filter)) {
			continue
		}
		if sm == nil {
			sm = &StoreMsg{}
		}
		sm.copyFrom(m.subj, m.hdr, m.msg, seq, m.ts)
		return sm, nil
	}
	return nil, ErrStoreEOF
}

func (ms *memStore) RemoveMsg(seq uint64) (bool, error) {
	ms.mu.Lock()
	defer ms.unlock()
	if err := ms.werr; err != nil {
		return false, err
	}
	return ms.removeLocked(seq, false), nil
}

func (ms *memStore) EraseMsg(seq uint64) (bool, error) {
	ms.mu.Lock()
	defer ms.unlock()
	if err := ms.werr; err != nil {
		return false, err
	}
	return ms.removeLocked(seq, true), nil
}

func (ms *memStore) Purge() (uint64, error) {
	ms.mu.Lock()
	defer ms.unlock()
	if err := ms.werr; err != nil {
		return 0, err
	}
	n := uint64(len(ms.msgs))
	if ms.watcher != nil {
		ms.watcher.Abandon()
	}
	ms.msgs = map[uint64]*memMsg{}
	ms.fss = subjects.New()
	ms.bytes = 0
	ms.first = ms.last + 1
	return n, nil
}

func (ms *memStore) PurgeEx(subject string, seq, keep uint64) (uint64, error) {
	if (subject == "" || subject == ">") && seq == 0 && keep == 0 {
		return ms.Purge()
	}
	ms.mu.Lock()
	defer ms.unlock()
	if err := ms.werr; err != nil {
		return 0, err
	}
	victims := ms.matchingLocked(subject)
	if seq > 0 {
		victims = filterSeqs(victims, func(s uint64) bool { return s < seq })
	}
	if keep > 0 {
		if uint64(len(victims)) <= keep {
			return 0, nil
		}
		victims = victims[:uint64(len(victims))-keep]
	}
	for _, s := range victims {
		ms.removeLocked(s, false)
	}
	return uint64(len(victims)), nil
}

// matchingLocked lists the sequences of messages matching subject, ascending.
func (ms *memStore) matchingLocked(subject string) []uint64 {
	all := subject == "" || subject == ">"
	var out []uint64
	if !all && !sublist.SubjectHasWildcard(subject) {
		// One subject: its chain, not every message.
		ss, ok := ms.fss.Get(subject)
		if !ok {
			return nil
		}
		out = make([]uint64, 0, ss.Msgs)
		for seq := ss.First; seq != 0; seq = ms.msgs[seq].next {
			out = append(out, seq)
		}
		return out
	}
	for seq, m := range ms.msgs {
		if all || sublist.MatchLiteral(m.subj, subject) {
			out = append(out, seq)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func filterSeqs(seqs []uint64, keep func(uint64) bool) []uint64 {
	out := seqs[:0]
	for _, s := range seqs {
		if keep(s) {
			out = append(out, s)
		}
	}
	return out
}

func (ms *memStore) Compact(seq uint64) (uint64, error) {
	ms.mu.Lock()
	defer ms.unlock()
	if err := ms.werr; err != nil {
		return 0, err
	}
	var n uint64
	for s := ms.first; s < seq && s <= ms.last; s++ {
		if ms.removeLocked(s, false) {
			n++
		}
	}
	if seq > ms.last {
		ms.last = seq - 1
	}
	if len(ms.msgs) == 0 {
		ms.first = ms.last + 1
	} else if ms.first < seq {
		ms.firstLiveLocked()
	}
	return n, nil
}

func (ms *memStore) ExpireBefore(cutoff int64) (uint64, error) {
	ms.mu.Lock()
	defer ms.unlock()
	if err := ms.werr; err != nil {
		return 0, err
	}
	var n uint64
	for len(ms.msgs) > 0 {
		seq := ms.firstLiveLocked()
		if ms.msgs[seq].ts >= cutoff {
			break
		}
		ms.removeLocked(seq, false)
		n++
	}
	return n, nil
}

func (ms *memStore) FastState(st *StreamState) {
	ms.mu.RLock()
	defer ms.mu.RUnlock()
	ms.fastStateLocked(st)
}

func (ms *memStore) fastStateLocked(st *StreamState) {
	st.Msgs, st.Bytes, st.LastSeq = uint64(len(ms.msgs)), ms.bytes, ms.last
	st.FirstSeq = ms.first
	st.FirstTime, st.LastTime = time.Time{}, time.Time{}
	if m, ok := ms.msgs[ms.first]; ok {
		st.FirstTime = time.Unix(0, m.ts).UTC()
	}
	if m, ok := ms.msgs[ms.last]; ok {
		st.LastTime = time.Unix(0, m.ts).UTC()
	}
	st.NumSubjects = ms.fss.Len()
	if st.Msgs > 0 {
		st.NumDeleted = int(st.LastSeq - st.FirstSeq + 1 - st.Msgs)
	} else {
		st.NumDeleted = 0
	}
}

func (ms *memStore) State() StreamState {
	ms.mu.RLock()
	defer ms.mu.RUnlock()
	var st StreamState
	ms.fastStateLocked(&st)
	if st.NumDeleted > 0 {
		for seq := ms.first; seq <= ms.last; seq++ {
			if _, ok := ms.msgs[seq]; !ok {
				st.Deleted = append(st.Deleted, seq)
			}
		}
	}
	return st
}

func (ms *memStore) SubjectsState(filter string) map[string]SimpleState {
	ms.mu.RLock()
	defer ms.mu.RUnlock()
	return subjectsStateOf(ms.fss, filter)
}

func (ms *memStore) FilteredState(seq uint64, subject string) SimpleState {
	ms.mu.RLock()
	defer ms.mu.RUnlock()
	var st SimpleState
	all := subject == "" || subject == ">"
	if !all && !sublist.SubjectHasWildcard(subject) {
		// One subject: its state, or its chain back to seq.
		ss, _ := ms.fss.Get(subject)
		if ss.Msgs == 0 || seq <= ss.First {
			return SimpleState(ss)
		}
		for s := ss.Last; s >= seq && s != 0; s = ms.msgs[s].prev {
			st.First, st.Last = s, ss.Last
			st.Msgs++
		}
		return st
	}
	for s := max(seq, ms.first); s <= ms.last; s++ {
		m, ok := ms.msgs[s]
		if !ok || !(all || sublist.MatchLiteral(m.subj, subject)) {
			continue
		}
		if st.Msgs == 0 {
			st.First = s
		}
		st.Msgs++
		st.Last = s
	}
	return st
}

func (ms *memStore) UpdateLimits(l StoreLimits) error {
	ms.mu.Lock()
	defer ms.unlock()
	if err := ms.werr; err != nil {
		return err
	}
	ms.limits = l
	// Per-subject limits first, subjects in sorted order, then the global
	// limits: the outcome must not depend on map iteration order.
	global := l
	ms.limits = StoreLimits{MaxMsgsPerSubject: l.MaxMsgsPerSubject}
	for _, subj := range slices.Sorted(ms.fss.Keys()) {
		ms.enforceLimitsLocked(subj)
	}
	ms.limits = global
	ms.enforceLimitsLocked("")
	return nil
}

func (ms *memStore) SetRemovalWatcher(w RemovalWatcher) {
	ms.mu.Lock()
	ms.watcher = w
	ms.mu.Unlock()
}

func (ms *memStore) Sync() error  { return nil }
func (ms *memStore) Flush() error { return nil }

func (ms *memStore) Stop() error {
	ms.mu.Lock()
	defer ms.unlock()
	ms.closed = true
	return nil
}

func (ms *memStore) Delete() error { return ms.Stop() }

func (ms *memStore) ReadLive(from, to uint64, sm *StoreMsg, fn func(*StoreMsg), after func()) error {
	ms.mu.RLock()
	defer ms.mu.RUnlock()
	if ms.closed {
		return ErrStoreClosed
	}
	for seq := max(from, ms.first); seq <= to && seq <= ms.last; seq++ {
		if m, ok := ms.msgs[seq]; ok {
			sm.copyFrom(m.subj, m.hdr, m.msg, seq, m.ts)
			fn(sm)
		}
	}
	after()
	return nil
}
