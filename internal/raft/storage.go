package raft

import "slices"

// Storage is the durable log the core reads from. The driver writes to it
// (entries, hard state and snapshots from Ready) and the core only reads.
// Entries handed out in a Ready are read from Storage only after Advance.
//
// Errors other than ErrCompacted and ErrUnavailable are treated as fatal for
// the group: the core panics and the driver (Driver.Process) turns the panic
// into an error so the upper layer can stop the group and mark it unhealthy.
type Storage interface {
	// InitialState returns the persisted hard state and the membership in
	// force at FirstIndex()-1 (the snapshot's peers). Empty peers means the
	// group bootstraps from Config.Peers.
	InitialState() (HardState, []ID, error)
	// Entries returns entries [lo, hi), at most maxBytes of them but always
	// at least one when lo < hi. ErrCompacted if lo < FirstIndex().
	Entries(lo, hi, maxBytes uint64) ([]Entry, error)
	// Term returns the term of entry i, for i in [FirstIndex()-1, LastIndex()].
	Term(i uint64) (uint64, error)
	// FirstIndex is the index of the first entry still held (snapshot index + 1).
	FirstIndex() (uint64, error)
	// LastIndex is the index of the last entry held (the snapshot index if none).
	LastIndex() (uint64, error)
	// Snapshot returns the most recent snapshot.
	Snapshot() (Snapshot, error)
}

// limitSize keeps the longest prefix of ents within maxBytes, but at least
// one entry.
func limitSize(ents []Entry, maxBytes uint64) []Entry {
	if len(ents) == 0 {
		return ents
	}
	size := ents[0].size()
	k := 1
	for ; k < len(ents); k++ {
		size += ents[k].size()
		if size > maxBytes {
			break
		}
	}
	return ents[:k:k]
}

// MemoryStorage is a Storage kept in memory, for tests and the simulator. It
// also offers the write side a driver needs. It is not safe for concurrent use.
type MemoryStorage struct {
	hs   HardState
	snap Snapshot
	// ents[0] is a placeholder standing for the snapshot's last entry
	// (Index = snap.Index, Term = snap.Term).
	ents []Entry
}

// NewMemoryStorage returns an empty storage.
func NewMemoryStorage() *MemoryStorage {
	return &MemoryStorage{ents: make([]Entry, 1)}
}

// InitialState implements Storage.
func (s *MemoryStorage) InitialState() (HardState, []ID, error) {
	return s.hs, slices.Clone(s.snap.Peers), nil
}

// HardState returns the stored hard state.
func (s *MemoryStorage) HardState() HardState { return s.hs }

// SetHardState stores hs.
func (s *MemoryStorage) SetHardState(hs HardState) { s.hs = hs }

func (s *MemoryStorage) offset() uint64 { return s.ents[0].Index }

func (s *MemoryStorage) lastIndex() uint64 { return s.offset() + uint64(len(s.ents)) - 1 }

// Entries implements Storage.
func (s *MemoryStorage) Entries(lo, hi, maxBytes uint64) ([]Entry, error) {
	off := s.offset()
	if lo <= off {
		return nil, ErrCompacted
	}
	if hi > s.lastIndex()+1 {
		return nil, ErrUnavailable
	}
	if lo >= hi {
		return nil, nil
	}
	return limitSize(s.ents[lo-off:hi-off], maxBytes), nil
}

// Term implements Storage.
func (s *MemoryStorage) Term(i uint64) (uint64, error) {
	off := s.offset()
	if i < off {
		return 0, ErrCompacted
	}
	if i > s.lastIndex() {
		return 0, ErrUnavailable
	}
	return s.ents[i-off].Term, nil
}

// FirstIndex implements Storage.
func (s *MemoryStorage) FirstIndex() (uint64, error) { return s.offset() + 1, nil }

// LastIndex implements Storage.
func (s *MemoryStorage) LastIndex() (uint64, error) { return s.lastIndex(), nil }

// Snapshot implements Storage.
func (s *MemoryStorage) Snapshot() (Snapshot, error) { return s.snap, nil }

// Append writes ents, which must follow on from the log or overlap it; an
// overlapping suffix replaces what was there (conflicting tail truncation).
// Entries before FirstIndex are ignored.
func (s *MemoryStorage) Append(ents []Entry) error {
	if len(ents) == 0 {
		return nil
	}
	first := s.offset() + 1
	if last := ents[len(ents)-1].Index; last < first {
		return nil
	}
	if ents[0].Index < first {
		ents = ents[first-ents[0].Index:]
	}
	at := ents[0].Index - s.offset()
	switch {
	case at == uint64(len(s.ents)):
		s.ents = append(s.ents, ents...)
	case at < uint64(len(s.ents)):
		// A new array, so that slices handed out earlier keep their contents.
		s.ents = append(slices.Clone(s.ents[:at]), ents...)
	default:
		return ErrUnavailable // a gap: the caller skipped entries
	}
	return nil
}

// ApplySnapshot replaces the whole log with snap (a snapshot received from
// the leader). Entries are dropped even if some follow snap.Index: the core
// only installs a snapshot that does not match its log.
func (s *MemoryStorage) ApplySnapshot(snap Snapshot) error {
	if snap.Index <= s.snap.Index {
		return ErrSnapOutOfDate
	}
	s.snap = cloneSnapshot(snap)
	s.ents = []Entry{{Index: snap.Index, Term: snap.Term}}
	return nil
}

// Compact records snap, taken locally at an index this storage holds, and
// drops the entries it covers. Entries after snap.Index are kept.
func (s *MemoryStorage) Compact(snap Snapshot) error {
	off := s.offset()
	if snap.Index <= off {
		return ErrSnapOutOfDate
	}
	if snap.Index > s.lastIndex() {
		return ErrUnavailable
	}
	rest := s.ents[snap.Index-off:]
	ents := make([]Entry, 1, len(rest))
	ents[0] = Entry{Index: snap.Index, Term: rest[0].Term}
	s.ents = append(ents, rest[1:]...)
	s.snap = cloneSnapshot(snap)
	return nil
}

// Save implements LogStore: the writes are immediate (Sync does nothing).
func (s *MemoryStorage) Save(snap *Snapshot, ents []Entry, hs *HardState) error {
	if snap != nil {
		if err := s.ApplySnapshot(*snap); err != nil {
			return err
		}
	}
	if err := s.Append(ents); err != nil {
		return err
	}
	if hs != nil {
		s.hs = *hs
	}
	return nil
}

// Sync implements LogStore.
func (s *MemoryStorage) Sync() error { return nil }

func cloneSnapshot(s Snapshot) Snapshot {
	s.Peers = slices.Clone(s.Peers)
	return s
}
