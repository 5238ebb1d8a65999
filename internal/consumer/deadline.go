package consumer

// NextDeadline is the earliest moment (unix ns) a pending message not
// skipped (skip may be nil) becomes due for redelivery, false when there
// is none. It only reads: the leader arms its ack-wait timer with it,
// skipping what its redelivery queue already holds, and when the timer
// fires proposes an OpRedeliverDue the apply checks against the state.
func (s *State) NextDeadline(skip func(seq uint64) bool) (int64, bool) {
	var best int64
	found := false
	if s.cfg.AckPolicy == AckFlowControl { // never redelivers
		return 0, false
	}
	for seq, p := range s.pending {
		if skip != nil && skip(seq) {
			continue
		}
		if d := p.TS + s.cfg.wait(p.Deliveries); !found || d < best {
			best, found = d, true
		}
	}
	return best, found
}

// PendingBelow lists, ascending, the pending messages with stream
// sequence below seq (what a stream that dropped its head took away).
func (s *State) PendingBelow(seq uint64) []uint64 {
	if s.floor.Stream+1 >= seq {
		return nil
	}
	var out []uint64
	for _, p := range s.sortedPending() {
		if p >= seq {
			break
		}
		out = append(out, p)
	}
	return out
}

// PendingMissing lists, ascending, the pending messages for which gone
// reports true (a subject purge took some from the middle of the stream).
func (s *State) PendingMissing(gone func(seq uint64) bool) []uint64 {
	var out []uint64
	for _, p := range s.sortedPending() {
		if gone(p) {
			out = append(out, p)
		}
	}
	return out
}
