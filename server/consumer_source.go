package server

import (
	cstate "github.com/nats-io/nats-server/v2/internal/consumer"
	"github.com/nats-io/nats-server/v2/internal/store"
)

// storeSource is what a consumer's state machine reads of its stream
// (cstate.Source): the stream's store at the moment of apply, through
// the store's Queries, which answer from counters and the per-subject
// index rather than by scanning.
type storeSource struct {
	st store.StreamStore
}

var _ cstate.Source = storeSource{}

// newStoreSource is the cstate.Source of a stream's store.
func newStoreSource(st store.StreamStore) cstate.Source { return storeSource{st: st} }

// Bounds is (0, 0) while no sequence was ever assigned, else the store's
// first and last sequences (first = last+1 when it is empty, also when
// sequences were skipped to honour a first_seq without any message).
func (s storeSource) Bounds() (first, last uint64) {
	first, last = s.st.Bounds()
	if last == 0 {
		return 0, 0
	}
	return first, last
}

func (s storeSource) Contains(seq uint64) bool { return s.st.Contains(seq) }

func (s storeSource) NumPending(from uint64, filters []string, lastPerSubject bool) uint64 {
	return s.st.NumPending(from, filters, lastPerSubject)
}

func (s storeSource) LastMatching(filters []string) uint64 { return s.st.LastMatching(filters) }

func (s storeSource) SeqAtTime(ts int64) uint64 { return s.st.SeqAtTime(ts) }

// nextMatching is the first stored message at or after start matching one
// of filters (any message when none), loaded into sm; nil when none is.
func (s storeSource) nextMatching(filters []string, start uint64, sm *StoreMsg) *StoreMsg {
	if len(filters) == 0 {
		filters = []string{">"}
	}
	var best uint64
	var loaded *StoreMsg
	for _, f := range filters {
		if m, err := s.st.LoadNextMsg(f, start, sm); err == nil {
			loaded = m
			if best == 0 || m.Seq < best {
				best = m.Seq
			}
		}
	}
	if best == 0 {
		return nil
	}
	if loaded.Seq == best {
		return loaded // the last message loaded is the one: no second read
	}
	m, err := s.st.LoadMsg(best, sm)
	if err != nil {
		return nil
	}
	return m
}
