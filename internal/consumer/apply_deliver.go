package consumer

import "slices"

// deliver applies a Deliver entry: the leader asks to send these stream
// messages. Each is decided here, in log order:
//   - a message above Delivered is a first delivery: it must be stored,
//     and max_ack_pending must leave room for it;
//   - a pending message is a redelivery: it must be due at e.TS and below
//     max_deliver;
//   - anything else (acknowledged meanwhile, below the floor, out of order,
//     removed from the stream) is not delivered.
//
// Consumer sequences are assigned here, one per delivery, redeliveries
// included; a message keeps the consumer sequence of its first delivery in
// Pending. The whole entry is refused when the consumer was updated after
// the leader made it (e.Gen) or is paused at e.TS.
func (s *State) deliver(e *Entry, src Source, out *Outcome) {
	out.Tag = e.Tag
	if e.Gen != s.gen {
		out.Err = ErrStaleDelivery
		return
	}
	if s.paused > e.TS {
		out.Err = ErrPaused
		return
	}
	for _, seq := range e.Seqs {
		if p, ok := s.pending[seq]; ok {
			s.redeliver(seq, p, e.TS, src, out)
		} else if seq > s.delivered.Stream && s.hasRoom() && src.Contains(seq) {
			s.firstDelivery(seq, e.TS, out)
		}
	}
	if len(out.Deliveries) == 0 {
		return
	}
	out.Changed = true
	s.lastDeliv = e.TS
	s.refloor()
	s.numberPending(src, out)
}

// hasRoom reports whether max_ack_pending allows one more pending message.
func (s *State) hasRoom() bool {
	return s.cfg.MaxAckPending <= 0 || int64(len(s.pending)) < s.cfg.MaxAckPending
}

func (s *State) firstDelivery(seq uint64, ts int64, out *Outcome) {
	s.delivered = SeqPair{Consumer: s.delivered.Consumer + 1, Stream: seq}
	out.Deliveries = append(out.Deliveries, Delivery{SSeq: seq, CSeq: s.delivered.Consumer, Deliveries: 1})
	if s.cfg.AckPolicy == AckNone {
		// Nothing to acknowledge: the message leaves this consumer's interest now.
		out.Acked = append(out.Acked, seq)
		return
	}
	if s.pending == nil {
		s.pending = make(map[uint64]*Pending)
	}
	s.pending[seq] = &Pending{CSeq: s.delivered.Consumer, Deliveries: 1, TS: ts}
	s.track(seq)
}

func (s *State) redeliver(seq uint64, p *Pending, ts int64, src Source, out *Outcome) {
	if !s.due(p, ts) || s.reachedMax(p) || !src.Contains(seq) {
		return
	}
	s.delivered.Consumer++
	p.Deliveries++
	p.TS = ts
	out.Deliveries = append(out.Deliveries, Delivery{SSeq: seq, CSeq: s.delivered.Consumer, Deliveries: p.Deliveries})
}

func (s *State) reachedMax(p *Pending) bool {
	return s.cfg.MaxDeliver > 0 && p.Deliveries >= uint64(s.cfg.MaxDeliver)
}

// numberPending fills each delivery's num_pending: what is left to deliver
// once this entry is applied, plus the first deliveries after it in the
// entry. Exact when the leader delivers the matching messages in order,
// which is how it delivers; the same on every replica either way.
func (s *State) numberPending(src Source, out *Outcome) {
	left := s.NumPending(src)
	for i := len(out.Deliveries) - 1; i >= 0; i-- {
		d := &out.Deliveries[i]
		d.Pending = left
		if d.Deliveries == 1 {
			left++
		}
	}
	if s.cfg.AckPolicy == AckNone && len(out.Acked) > 1 {
		slices.Sort(out.Acked) // already ascending: first deliveries only go up
	}
}

// redeliverDue applies the leader's redelivery timer: each listed pending
// message (every pending one when none is listed) that is due at e.TS is
// either retired, when it reached max_deliver (it leaves pending, the
// floor moves over it, a max deliveries advisory), or handed back to the
// leader's redelivery queue (Due). A message acknowledged, or given more
// time, since the leader looked is left alone.
func (s *State) redeliverDue(e *Entry, out *Outcome) {
	seqs := e.Seqs
	if len(seqs) == 0 {
		seqs = s.sortedPending()
	}
	retired := false
	for _, seq := range seqs {
		p, ok := s.pending[seq]
		if !ok || !s.due(p, e.TS) {
			continue
		}
		if !s.reachedMax(p) {
			out.Due = append(out.Due, seq)
			continue
		}
		delete(s.pending, seq)
		if s.maxed == nil {
			s.maxed = make(map[uint64]uint64)
		}
		s.maxed[seq] = p.Deliveries
		retired = true
		out.event(Event{Kind: EventMaxDeliveries, SSeq: seq, CSeq: p.CSeq, Deliveries: p.Deliveries})
	}
	slices.Sort(out.Due)
	out.Due = slices.Compact(out.Due)
	if retired {
		out.Changed = true
		s.refloor()
	}
}

func (s *State) sortedPending() []uint64 {
	seqs := make([]uint64, 0, len(s.pending))
	for seq := range s.pending {
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	return seqs
}
