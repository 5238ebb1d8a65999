package server

import (
	cstate "github.com/nats-io/nats-server/v2/internal/consumer"
)

// storeSource is the consumer state machine's view of its stream's store
// (cstate.Source), by the store's own queries and, where the store has
// none yet, by scanning. It is the one place to swap for fast store
// queries (NumPending, SeqAtTime) when the store grows them. The caller
// holds the stream's lock, so the store does not change under a query.
type storeSource struct{ st StreamStore }

var _ cstate.Source = storeSource{}

func (s storeSource) Bounds() (first, last uint64) {
	var ss StreamState
	s.st.FastState(&ss)
	return ss.FirstSeq, ss.LastSeq
}

func (s storeSource) Contains(seq uint64) bool {
	var sm StoreMsg
	_, err := s.st.LoadMsg(seq, &sm)
	return err == nil
}

func allIfNone(filters []string) []string {
	if len(filters) == 0 {
		return []string{">"}
	}
	return filters
}

// NumPending sums over the filters: a consumer's filters never overlap
// (checkConsumerFilters refuses overlapping ones).
func (s storeSource) NumPending(from uint64, filters []string, lastPerSubject bool) uint64 {
	if !lastPerSubject && (len(filters) == 0 || (len(filters) == 1 && filters[0] == ">")) {
		if n, ok := s.countFrom(from); ok {
			return n
		}
	}
	var n uint64
	for _, f := range allIfNone(filters) {
		if !lastPerSubject {
			n += s.st.FilteredState(from, f).Msgs
			continue
		}
		for _, ss := range s.st.SubjectsState(f) {
			if ss.Last >= from {
				n++
			}
		}
	}
	return n
}

func (s storeSource) LastMatching(filters []string) uint64 {
	var best uint64
	var sm StoreMsg
	for _, f := range allIfNone(filters) {
		if m, err := s.st.LoadLastMsg(f, &sm); err == nil && m.Seq > best {
			best = m.Seq
		}
	}
	return best
}

// SeqAtTime scans from the first message (TODO: the store's time index).
func (s storeSource) SeqAtTime(ts int64) uint64 {
	first, last := s.Bounds()
	var sm StoreMsg
	for seq := first; seq <= last && seq > 0; {
		m, err := s.st.LoadNextMsg(">", seq, &sm)
		if err != nil {
			break
		}
		if m.TS >= ts {
			return m.Seq
		}
		seq = m.Seq + 1
	}
	return last + 1
}

// nextMatching is the first stored message at or after start matching one
// of filters, loaded into sm; nil when none is.
func (s storeSource) nextMatching(filters []string, start uint64, sm *StoreMsg) *StoreMsg {
	var best uint64
	for _, f := range allIfNone(filters) {
		if m, err := s.st.LoadNextMsg(f, start, sm); err == nil && (best == 0 || m.Seq < best) {
			best = m.Seq
		}
	}
	if best == 0 {
		return nil
	}
	m, err := s.st.LoadMsg(best, sm)
	if err != nil {
		return nil
	}
	return m
}

// countFrom counts every message at or after from in O(1) when the
// stream's state tells (from outside the stored range, or no interior
// deletes); ok is false when it would need a scan.
func (s storeSource) countFrom(from uint64) (uint64, bool) {
	var ss StreamState
	s.st.FastState(&ss)
	switch {
	case ss.Msgs == 0 || from > ss.LastSeq:
		return 0, true
	case from <= ss.FirstSeq:
		return ss.Msgs, true
	case ss.NumDeleted == 0:
		return ss.LastSeq - from + 1, true
	}
	return 0, false
}
