package server

import (
	"slices"

	cstate "github.com/nats-io/nats-server/v2/internal/consumer"
)

// Interest and work-queue retention, with nats-server's semantics, decided
// inside the apply from applied state only: retainLocked is called by
// consumer.applyLocked right after each entry, and the publish apply asks
// noInterestLocked. No timer, clock or leader-only state takes part, so
// when consumer entries come from the stream's raft log every replica
// removes the same messages at the same point.
//
//   - an ack (any message leaving a consumer's interest: +ACK, +TERM, ack
//     all, an AckNone delivery) removes the message once no consumer needs
//     it (cstate.Removable);
//   - interest: a message published while no consumer's filter matches it
//     is not kept (its sequence is used); deleting a consumer, or changing
//     its filters, removes from its old ack floor up what nobody needs now,
//     and deleting the last consumer purges the stream;
//   - work queue: a message nobody matches waits for a consumer.

// retention is the stream's policy as the state machine names it.
func (mset *stream) retentionLocked() cstate.Retention {
	switch mset.cfg.Retention {
	case InterestPolicy:
		return cstate.InterestRetention
	case WorkQueuePolicy:
		return cstate.WorkQueueRetention
	}
	return cstate.LimitsRetention
}

// consumerStatesLocked lists the states of the consumers that exist, in
// no particular order: Removable's answer does not depend on it. The list
// reuses the stream's buffer and is valid until the next call.
func (mset *stream) consumerStatesLocked() []*cstate.State {
	states := mset.statesBuf[:0]
	for _, o := range mset.consumers {
		if o.state.Exists() {
			states = append(states, &o.state)
		}
	}
	clear(states[len(states):cap(states)]) // no deleted consumer kept alive
	mset.statesBuf = states
	return states
}

// retainLocked removes what the entry just applied to o let go. floor and
// filters are o's ack floor and filters before the entry.
func (mset *stream) retainLocked(o *consumer, e *cstate.Entry, out *cstate.Outcome, floor uint64, filters []string) {
	ret := mset.retentionLocked()
	if ret == cstate.LimitsRetention || out.Err != nil {
		return
	}
	if len(out.Acked) > 0 {
		mset.removeUnwantedLocked(ret, out.Acked, mset.consumerStatesLocked())
	}
	if !out.Interest || ret != cstate.InterestRetention {
		return
	}
	switch {
	case e.Op == cstate.OpDelete:
		mset.interestLostLocked(floor)
	case e.Op == cstate.OpUpdate && !slices.Equal(filters, o.state.Config().FilterSubjects):
		mset.interestLostLocked(floor)
	}
}

// removeUnwantedLocked removes those of cands no consumer needs.
func (mset *stream) removeUnwantedLocked(ret cstate.Retention, cands []uint64, states []*cstate.State) {
	st := mset.st()
	var sm StoreMsg
	subject := func(seq uint64) (string, bool) {
		m, err := st.LoadMsg(seq, &sm)
		if err != nil {
			return "", false
		}
		return m.Subj, true
	}
	for _, seq := range cstate.AppendRemovable(nil, ret, cands, subject, states) {
		_, _ = st.RemoveMsg(seq)
	}
}

// interestLostLocked: a consumer of an interest stream went away or
// narrowed its filters. With no consumer left the stream is purged (as
// nats-server does); else every message above from that no consumer needs
// any more is removed: O(messages above from), up to where an unfiltered
// consumer still needs everything.
func (mset *stream) interestLostLocked(from uint64) {
	states := mset.consumerStatesLocked()
	st := mset.st()
	if len(states) == 0 {
		_, _ = st.Purge()
		return
	}
	first, last := st.Bounds()
	for _, s := range states { // an unfiltered consumer needs everything it has not had yet
		if len(s.Config().FilterSubjects) == 0 {
			last = min(last, s.NeedsAllAbove())
		}
	}
	var cands []uint64
	var sm StoreMsg
	for seq := max(from+1, first); seq <= last; seq++ {
		m, err := st.LoadNextMsg("", seq, &sm)
		if err != nil || m.Seq > last {
			break
		}
		seq = m.Seq
		if cstate.Removable(cstate.InterestRetention, seq, m.Subj, states) {
			cands = append(cands, seq)
		}
	}
	for _, seq := range cands {
		_, _ = st.RemoveMsg(seq)
	}
}

// noInterestLocked reports whether a message published on subj is not to
// be kept: the stream has interest retention and no consumer matches it.
func (mset *stream) noInterestLocked(subj string) bool {
	if mset.cfg.Retention != InterestPolicy {
		return false
	}
	for _, o := range mset.consumers {
		if o.state.Exists() && o.state.Matches(subj) {
			return false
		}
	}
	return true
}

// skipNoInterestLocked uses the next sequence without storing anything.
func (mset *stream) skipNoInterestLocked() (uint64, error) {
	st := mset.st()
	if err := st.SkipMsgs(1); err != nil {
		return 0, err
	}
	_, last := st.Bounds()
	return last, nil
}

// retentionChangedLocked: the stream's retention went from limits to
// interest (the only change nats-server allows besides back). With no
// consumer every message goes; else each consumer's acknowledged messages
// (matching it, up to its ack floor) go unless another consumer needs them.
func (mset *stream) retentionChangedLocked(old RetentionPolicy) {
	if old != LimitsPolicy || mset.cfg.Retention != InterestPolicy {
		return
	}
	st := mset.st()
	states := mset.consumerStatesLocked()
	first, last := st.Bounds()
	if len(states) == 0 {
		if first <= last {
			_, _ = st.Compact(last + 1)
		}
		return
	}
	var sm StoreMsg
	for _, s := range states {
		var cands []uint64
		floor := min(s.AckFloor().Stream, last)
		for seq := first; seq <= floor; seq++ {
			m, err := st.LoadNextMsg("", seq, &sm)
			if err != nil || m.Seq > floor {
				break
			}
			seq = m.Seq
			if s.Matches(m.Subj) {
				cands = append(cands, seq)
			}
		}
		mset.removeUnwantedLocked(cstate.InterestRetention, cands, states)
	}
}
