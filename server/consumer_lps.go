package server

import (
	"slices"

	cstate "github.com/nats-io/nats-server/v2/internal/consumer"
	"github.com/nats-io/nats-server/v2/internal/store"
)

// deliver_policy last_per_subject: a new consumer first delivers the last
// message of each subject matching its filters, as the stream holds them
// when it is created, in stream order, then everything stored after. The
// list of those messages is leader-only soft state (o.lss), made at
// creation; nothing that matches lies between its last entry and the
// stream's end at creation (that message would be a last one), so once it
// is delivered the consumer simply goes on from there.

// lastPerSubjectSeqs lists the last sequence of each subject matching one
// of filters (every subject when none), ascending.
func lastPerSubjectSeqs(st store.StreamStore, filters []string) []uint64 {
	if len(filters) == 0 {
		filters = []string{">"}
	}
	var seen map[string]struct{} // only several filters can name a subject twice
	if len(filters) > 1 {
		seen = make(map[string]struct{})
	}
	var seqs []uint64
	for _, f := range filters {
		subjs := st.SubjectsState(f)
		seqs = slices.Grow(seqs, len(subjs))
		for subj, ss := range subjs {
			if seen != nil {
				if _, dup := seen[subj]; dup {
					continue
				}
				seen[subj] = struct{}{}
			}
			seqs = append(seqs, ss.Last)
		}
	}
	slices.Sort(seqs)
	return seqs
}

// FirstLastPerSubject is where a last_per_subject consumer starts (see
// cstate.LastPerSubjectSource).
func (s storeSource) FirstLastPerSubject(filters []string) uint64 {
	seqs := lastPerSubjectSeqs(s.st, filters)
	if len(seqs) == 0 {
		return 0
	}
	return seqs[0]
}

// initLastPerSubjectLocked makes a new last_per_subject consumer's list.
func (o *consumer) initLastPerSubjectLocked() {
	if o.cfg.DeliverPolicy != DeliverLastPerSubject {
		return
	}
	o.lss = lastPerSubjectSeqs(o.mset.st(), o.cfg.filters())
	_, o.lssEnd = storeSource{o.mset.st()}.Bounds()
	o.lssEnd = max(o.lssEnd, 1) // 0 means "no list"
}

// sourceLocked is what the consumer's state machine reads of its stream.
// A last_per_subject consumer made on this server counts num_pending as
// nats-server does while it runs: the initial messages not delivered yet,
// plus every matching message stored after its creation (each will be
// delivered, not only the last of its subject), in O(log n) per delivery.
// A recovered one (no list) counts the last of each subject from the next
// sequence on, as nats-server does after a restart.
func (o *consumer) sourceLocked() cstate.Source {
	src := storeSource{o.mset.st()}
	if o.lssEnd == 0 {
		return src
	}
	return lpsSource{storeSource: src, lss: o.lss, end: o.lssEnd}
}

// lpsSource is a storeSource whose last-per-subject count is the
// consumer's running one (see sourceLocked).
type lpsSource struct {
	storeSource
	lss []uint64
	end uint64
}

func (s lpsSource) NumPending(from uint64, filters []string, lastPerSubject bool) uint64 {
	if !lastPerSubject {
		return s.storeSource.NumPending(from, filters, false)
	}
	first, _ := slices.BinarySearch(s.lss, from)
	return uint64(len(s.lss)-first) + s.storeSource.NumPending(max(from, s.end+1), filters, false)
}

// FirstLastPerSubject is the list's first entry: a consumer whose list is
// made before its create is applied does not scan the subjects twice.
func (s lpsSource) FirstLastPerSubject([]string) uint64 {
	if len(s.lss) == 0 {
		return 0
	}
	return s.lss[0]
}

// numPendingLocked is the consumer's num_pending.
func (o *consumer) numPendingLocked() uint64 { return o.state.NumPending(o.sourceLocked()) }

// nextLastPerSubjectLocked is the next message of the initial list at or
// after from (the leader's cursor past deliveries in flight) still stored,
// loaded into sm; nil when there is none. On one server an entry gone
// meanwhile is dropped; on a replicated stream the list changes only at
// apply (trimLastPerSubjectLocked), so every replica counts the same.
func (o *consumer) nextLastPerSubjectLocked(from uint64, sm *StoreMsg) *StoreMsg {
	o.trimLastPerSubjectLocked()
	for i, _ := slices.BinarySearch(o.lss, from); i < len(o.lss); {
		if m, err := o.mset.st().LoadMsg(o.lss[i], sm); err == nil {
			return m
		}
		if o.viaLog() {
			i++
			continue
		}
		o.lss = slices.Delete(o.lss, i, i+1) // gone meanwhile
	}
	if len(o.lss) == 0 {
		o.lss = nil
	}
	return nil
}

// trimLastPerSubjectLocked drops the list's entries delivered already (on
// a replicated stream at each applied Deliver, on every replica alike).
func (o *consumer) trimLastPerSubjectLocked() {
	d := o.state.Delivered().Stream
	i := 0
	for i < len(o.lss) && o.lss[i] <= d {
		i++
	}
	if i > 0 {
		o.lss = o.lss[i:]
	}
}
