package consumer

// The ack floor is a function of the applied state: Delivered when
// nothing is pending, else one below the lowest pending message (its
// stream sequence and the consumer sequence of its first delivery).
// s.floor caches it; refloor brings the cache up to date after pending
// changed, looking for the new lowest message only when the old one left.

// refloor recomputes s.floor after pending changed.
func (s *State) refloor() {
	if len(s.pending) == 0 {
		s.floor = s.delivered
		return
	}
	if p, ok := s.pending[s.floor.Stream+1]; ok {
		s.floor.Consumer = p.CSeq - 1
		return
	}
	seq, p := s.lowestPending()
	s.floor = SeqPair{Consumer: p.CSeq - 1, Stream: seq - 1}
}

// lowestPending finds the pending message with the lowest stream
// sequence: walking the sequences above the floor when that is the
// shorter walk, else every pending message. Pending is not empty.
func (s *State) lowestPending() (uint64, *Pending) {
	from, to := s.floor.Stream+1, s.delivered.Stream
	if to >= from && to-from < uint64(len(s.pending)) {
		for seq := from; seq <= to; seq++ {
			if p, ok := s.pending[seq]; ok {
				return seq, p
			}
		}
	}
	var low uint64
	var lp *Pending
	for seq, p := range s.pending {
		if lp == nil || seq < low {
			low, lp = seq, p
		}
	}
	return low, lp
}

// removePending drops seq from pending (the caller refloors once after a
// batch of removals). It reports the record removed.
func (s *State) removePending(seq uint64) (*Pending, bool) {
	p, ok := s.pending[seq]
	if ok {
		delete(s.pending, seq)
	}
	return p, ok
}
