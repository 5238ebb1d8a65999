package consumer

// The ack floor is a function of the applied state: Delivered when
// nothing is pending, else one below the lowest pending message (its
// stream sequence and the consumer sequence of its first delivery).
// s.floor caches it, and s.order makes finding the lowest pending message
// cheap: first deliveries only go up in stream sequence, so pending
// sequences in delivery order are ascending. order keeps them in that
// order and forgets the ones no longer pending lazily, from its head when
// the floor is looked for, and all at once when they outnumber the pending
// ones (so it never holds more than about twice the pending messages).
// Neither cache is part of a snapshot: both are rebuilt on restore.

// track records a first delivery of seq (above every pending sequence).
func (s *State) track(seq uint64) { s.order = append(s.order, seq) }

// refloor recomputes s.floor after pending changed.
func (s *State) refloor() {
	if len(s.pending) == 0 {
		s.floor, s.order = s.delivered, s.order[:0]
		return
	}
	i := 0
	for ; i < len(s.order); i++ {
		if _, ok := s.pending[s.order[i]]; ok {
			break
		}
	}
	s.order = s.order[i:]
	if len(s.order) == 0 { // cannot happen while order is kept; rebuilt rather than trusted
		s.order = s.sortedPending()
	} else if len(s.order) > 2*len(s.pending)+32 {
		s.compactOrder()
	}
	seq := s.order[0]
	s.floor = SeqPair{Consumer: s.pending[seq].CSeq - 1, Stream: seq - 1}
}

// compactOrder drops the sequences no longer pending from order, into a
// new array (so the memory the forgotten head held goes too).
func (s *State) compactOrder() {
	n := make([]uint64, 0, 2*len(s.pending))
	for _, seq := range s.order {
		if _, ok := s.pending[seq]; ok {
			n = append(n, seq)
		}
	}
	s.order = n
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
