package raft

import (
	"errors"
	"fmt"
	"slices"
)

// unstable holds what the core has accepted but the driver has not yet
// persisted: a snapshot to install and/or entries starting at offset.
// Entries below inProgress were handed to the driver in a Ready and are
// being made durable (a leader's sync running behind, Driver.SyncBehind):
// they are not handed again, and leave once the driver reports them
// persisted.
type unstable struct {
	snap       *Snapshot
	ents       []Entry
	offset     uint64 // index of ents[0]
	inProgress uint64 // first entry not yet handed to the driver (>= offset)
}

// unhanded returns the entries not yet handed to the driver.
func (u *unstable) unhanded() []Entry {
	return u.ents[u.inProgress-u.offset:]
}

// handAll marks every entry as handed to the driver.
func (u *unstable) handAll() { u.inProgress = u.offset + uint64(len(u.ents)) }

func (u *unstable) term(i uint64) (uint64, bool) {
	if i >= u.offset && i-u.offset < uint64(len(u.ents)) {
		return u.ents[i-u.offset].Term, true
	}
	if u.snap != nil && i == u.snap.Index {
		return u.snap.Term, true
	}
	return 0, false
}

// truncateAndAppend writes ents (contiguous) after index ents[0].Index-1,
// dropping whatever unstable entries followed that index.
func (u *unstable) truncateAndAppend(ents []Entry) {
	after := ents[0].Index - 1
	switch {
	case after+1 == u.offset+uint64(len(u.ents)):
		u.ents = append(u.ents, ents...)
	case after < u.offset:
		// Everything unstable is replaced; stored entries after `after` are
		// logically gone and the driver's append will overwrite them.
		u.offset = after + 1
		u.ents = slices.Clone(ents)
	default:
		u.ents = append(slices.Clone(u.ents[:after+1-u.offset]), ents...)
	}
	// Entries being persisted past `after` are gone: what replaces them
	// is handed again (a sync of the old ones reports nothing, stableTo).
	u.inProgress = min(u.inProgress, after+1)
	u.inProgress = max(u.inProgress, u.offset)
}

// stableTo marks entries up to (i, t) as persisted, if they are still
// there and were handed to the driver (below inProgress).
func (u *unstable) stableTo(i, t uint64) {
	if tt, ok := u.term(i); !ok || tt != t || i < u.offset || i >= u.inProgress {
		return
	}
	u.ents = u.ents[i+1-u.offset:]
	u.offset = i + 1
	if len(u.ents) == 0 {
		u.ents = nil
	}
}

// raftLog is the log as the core sees it: stable storage plus unstable tail.
type raftLog struct {
	st        Storage
	u         unstable
	committed uint64
	applied   uint64
	maxApply  uint64 // bytes of committed entries per Ready
}

func newRaftLog(st Storage, maxApply uint64) *raftLog {
	first := mustIndex(st.FirstIndex())
	last := mustIndex(st.LastIndex())
	return &raftLog{
		st:        st,
		u:         unstable{offset: last + 1, inProgress: last + 1},
		committed: first - 1,
		applied:   first - 1,
		maxApply:  maxApply,
	}
}

func mustIndex(i uint64, err error) uint64 {
	if err != nil {
		panic(fmt.Sprintf("raft: storage failed: %v", err))
	}
	return i
}

func (l *raftLog) String() string {
	return fmt.Sprintf("committed=%d applied=%d unstable.offset=%d len(unstable)=%d",
		l.committed, l.applied, l.u.offset, len(l.u.ents))
}

func (l *raftLog) firstIndex() uint64 {
	if l.u.snap != nil {
		return l.u.snap.Index + 1
	}
	return mustIndex(l.st.FirstIndex())
}

func (l *raftLog) lastIndex() uint64 {
	if n := len(l.u.ents); n > 0 {
		return l.u.offset + uint64(n) - 1
	}
	if l.u.snap != nil {
		return l.u.snap.Index
	}
	return mustIndex(l.st.LastIndex())
}

// durableIndex is the last index of the log known durable: entries still
// unstable (written or not) are not.
func (l *raftLog) durableIndex() uint64 {
	if len(l.u.ents) > 0 {
		return l.u.offset - 1
	}
	return l.lastIndex()
}

// term returns the term of entry i; ErrCompacted before the snapshot index
// and ErrUnavailable past the end.
func (l *raftLog) term(i uint64) (uint64, error) {
	if i+1 < l.firstIndex() {
		return 0, ErrCompacted
	}
	if i > l.lastIndex() {
		return 0, ErrUnavailable
	}
	if t, ok := l.u.term(i); ok {
		return t, nil
	}
	t, err := l.st.Term(i)
	if err != nil && !errors.Is(err, ErrCompacted) && !errors.Is(err, ErrUnavailable) {
		panic(fmt.Sprintf("raft: storage failed: %v", err))
	}
	return t, err
}

func (l *raftLog) lastTerm() uint64 {
	t, err := l.term(l.lastIndex())
	if err != nil {
		panic(fmt.Sprintf("raft: term of last entry: %v", err))
	}
	return t
}

func (l *raftLog) matchTerm(i, t uint64) bool {
	tt, err := l.term(i)
	return err == nil && tt == t
}

// isUpToDate reports whether a log ending at (lastIndex, lastTerm) is at
// least as up-to-date as ours (Raft §5.4.1).
func (l *raftLog) isUpToDate(lastIndex, lastTerm uint64) bool {
	our := l.lastTerm()
	return lastTerm > our || lastTerm == our && lastIndex >= l.lastIndex()
}

// findConflict returns the index of the first entry of ents that is not in
// the log with the same term, or 0 if all of them are.
func (l *raftLog) findConflict(ents []Entry) uint64 {
	for i := range ents {
		if !l.matchTerm(ents[i].Index, ents[i].Term) {
			return ents[i].Index
		}
	}
	return 0
}

// findConflictByTerm returns the largest index <= index whose term is <= term,
// with its term. It is how a rejection hint skips a whole term at a time.
func (l *raftLog) findConflictByTerm(index, term uint64) (uint64, uint64) {
	for ; index > 0; index-- {
		t, err := l.term(index)
		if err != nil {
			return index, 0
		}
		if t <= term {
			return index, t
		}
	}
	return 0, 0
}

// append adds ents (contiguous, following some index >= committed) to the
// unstable tail and returns the new last index.
func (l *raftLog) append(ents []Entry) uint64 {
	if len(ents) == 0 {
		return l.lastIndex()
	}
	if after := ents[0].Index - 1; after < l.committed {
		panic(fmt.Sprintf("raft: append after %d is below commit %d", after, l.committed))
	}
	l.u.truncateAndAppend(ents)
	return l.lastIndex()
}

// slice returns entries [lo, hi) within maxBytes (at least one).
func (l *raftLog) slice(lo, hi, maxBytes uint64) ([]Entry, error) {
	if lo < l.firstIndex() {
		return nil, ErrCompacted
	}
	if hi > l.lastIndex()+1 || lo > hi {
		panic(fmt.Sprintf("raft: slice [%d,%d) out of bounds (last %d)", lo, hi, l.lastIndex()))
	}
	if lo == hi {
		return nil, nil
	}
	var ents []Entry
	if lo < l.u.offset {
		end := min(hi, l.u.offset)
		stored, err := l.st.Entries(lo, end, maxBytes)
		if errors.Is(err, ErrCompacted) {
			return nil, err
		} else if err != nil {
			panic(fmt.Sprintf("raft: storage entries [%d,%d): %v", lo, end, err))
		}
		if uint64(len(stored)) < end-lo || hi <= l.u.offset {
			return stored, nil
		}
		ents = stored
	}
	if hi > l.u.offset {
		us := l.u.ents[max(lo, l.u.offset)-l.u.offset : hi-l.u.offset]
		if len(ents) > 0 {
			ents = append(slices.Clip(ents), us...)
		} else {
			ents = us
		}
	}
	return limitSize(ents, maxBytes), nil
}

// entries returns entries from i to the end, within maxBytes.
func (l *raftLog) entries(i, maxBytes uint64) ([]Entry, error) {
	last := l.lastIndex()
	if i > last {
		return nil, nil
	}
	return l.slice(i, last+1, maxBytes)
}

func (l *raftLog) hasNextCommitted() bool {
	if l.u.snap != nil {
		return false
	}
	return l.committed > max(l.applied, l.firstIndex()-1)
}

// nextCommitted returns committed entries not yet applied (bounded).
func (l *raftLog) nextCommitted() []Entry {
	if !l.hasNextCommitted() {
		return nil
	}
	lo := max(l.applied+1, l.firstIndex())
	ents, err := l.slice(lo, l.committed+1, l.maxApply)
	if err != nil {
		panic(fmt.Sprintf("raft: committed entries [%d,%d]: %v", lo, l.committed, err))
	}
	return ents
}

func (l *raftLog) commitTo(c uint64) {
	if c <= l.committed {
		return
	}
	if last := l.lastIndex(); c > last {
		panic(fmt.Sprintf("raft: commit %d is past the last index %d", c, last))
	}
	l.committed = c
}

func (l *raftLog) appliedTo(i uint64) {
	if i == 0 {
		return
	}
	if i > l.committed || i < l.applied {
		panic(fmt.Sprintf("raft: applied %d out of range [%d,%d]", i, l.applied, l.committed))
	}
	l.applied = i
}

// maybeCommit commits up to i if entry i has term t (only entries of the
// leader's current term are committed by counting, Raft §5.4.2).
func (l *raftLog) maybeCommit(i, t uint64) bool {
	if i > l.committed && l.matchTerm(i, t) {
		l.commitTo(i)
		return true
	}
	return false
}

// restore replaces the log with snapshot s (to be persisted by the driver).
func (l *raftLog) restore(s Snapshot) {
	l.u = unstable{snap: &s, offset: s.Index + 1, inProgress: s.Index + 1}
	l.committed = s.Index
}

// snapshot returns the snapshot to send to a lagging follower.
func (l *raftLog) snapshot() (Snapshot, error) {
	if l.u.snap != nil {
		return *l.u.snap, nil
	}
	return l.st.Snapshot()
}
