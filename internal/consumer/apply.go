package consumer

import "slices"

// Apply applies e to s and describes in out what the caller must do (out
// is reset first and may be reused between calls). It is deterministic:
// it reads only s, e (its TS is the only time it knows) and src, which the
// caller provides over the stream's store at this log index. A rejected
// entry (out.Err set) leaves s as it was.
func (s *State) Apply(e *Entry, src Source, out *Outcome) {
	out.Reset()
	switch e.Op {
	case OpCreate:
		s.create(e, src, out)
		return
	case OpDelete, OpUpdate, OpDeliver, OpAck, OpAckAll, OpNak, OpTerm, OpProgress,
		OpRedeliverDue, OpPause, OpResume, OpPin, OpUnpin, OpStreamRemoved, OpStreamPurged, OpAcks:
	default:
		out.Err = ErrBadEntry
		return
	}
	if !s.Exists() {
		out.Err = ErrNoConsumer
		return
	}
	switch e.Op {
	case OpDelete:
		s.delete(out)
	case OpUpdate:
		s.update(e, out)
	case OpDeliver:
		s.deliver(e, src, out)
	case OpAck:
		s.ack(e, out)
	case OpAckAll:
		s.ackAll(e, out)
	case OpAcks:
		s.acks(e, out)
	case OpNak:
		s.nak(e, out)
	case OpTerm:
		s.term(e, out)
	case OpProgress:
		s.progress(e, out)
	case OpRedeliverDue:
		s.redeliverDue(e, out)
	case OpPause, OpResume:
		s.pause(e, out)
	case OpPin, OpUnpin:
		s.pin(e, out)
	case OpStreamRemoved:
		s.streamRemoved(e, out)
	case OpStreamPurged:
		s.streamPurged(e, out)
	}
}

// ackable reports whether an ack of stream sequence seq can be answered:
// nats-server ignores, without a reply, acks of messages not delivered
// yet and acks to an AckNone consumer.
func (s *State) ackable(seq uint64) bool {
	return s.cfg.AckPolicy != AckNone && seq <= s.delivered.Stream
}

// ack is +ACK (and the ack half of +NXT). Under ack policy all it acks
// everything up to the message, as nats-server does.
func (s *State) ack(e *Entry, out *Outcome) {
	if s.cfg.AckPolicy == AckAll || s.cfg.AckPolicy == AckFlowControl {
		s.ackAll(e, out)
		return
	}
	if !s.ackable(e.Seq) {
		return
	}
	out.Reply = true
	if s.ackOne(e.Seq, e.TS, out) {
		s.refloor()
	}
}

// acks applies a batch of +ACKs the leader received close together (one
// client read): each as its own OpAck entry stamped e.TS would. Nothing is
// answered (acks that ask for a reply travel alone), and Acked is
// ascending whatever the order of the batch.
func (s *State) acks(e *Entry, out *Outcome) {
	one := Entry{Op: OpAck, TS: e.TS, Consumer: e.Consumer}
	for _, seq := range e.Seqs {
		one.Seq = seq
		s.ack(&one, out)
	}
	out.Reply = false
	slices.Sort(out.Acked)
	out.Acked = slices.Compact(out.Acked)
}

// ackOne acknowledges one message if this consumer still holds it
// (pending, or past max_deliver); the caller refloors.
func (s *State) ackOne(seq uint64, ts int64, out *Outcome) bool {
	if _, ok := s.removePending(seq); !ok {
		if _, ok := s.maxed[seq]; !ok {
			return false
		}
		delete(s.maxed, seq)
	}
	s.lastAck = ts
	out.Changed = true
	out.Acked = append(out.Acked, seq)
	return true
}

// ackAll acknowledges every message up to e.Seq.
func (s *State) ackAll(e *Entry, out *Outcome) {
	if !s.ackable(e.Seq) {
		return
	}
	out.Reply = true
	if e.Seq <= s.floor.Stream && !s.hasMaxedBelow(e.Seq) {
		return
	}
	from := s.floor.Stream + 1
	if e.Seq > s.floor.Stream && e.Seq-s.floor.Stream <= uint64(len(s.pending)) {
		for seq := from; seq <= e.Seq; seq++ {
			if _, ok := s.removePending(seq); ok {
				out.Acked = append(out.Acked, seq)
			}
		}
	} else {
		for seq := range s.pending {
			if seq <= e.Seq {
				delete(s.pending, seq)
				out.Acked = append(out.Acked, seq)
			}
		}
	}
	for seq := range s.maxed {
		if seq <= e.Seq {
			delete(s.maxed, seq)
			out.Acked = append(out.Acked, seq)
		}
	}
	if len(out.Acked) > 0 {
		slices.Sort(out.Acked)
		s.lastAck = e.TS
		out.Changed = true
		s.refloor()
	}
}

func (s *State) hasMaxedBelow(seq uint64) bool {
	for m := range s.maxed {
		if m <= seq {
			return true
		}
	}
	return false
}

// nak asks for a redelivery of a pending message, after e.Delay when it is
// positive: the message is due at e.TS+Delay (at e.TS without a delay).
func (s *State) nak(e *Entry, out *Outcome) {
	if !s.ackable(e.Seq) {
		return
	}
	out.Reply = true
	p, ok := s.pending[e.Seq]
	if !ok || e.CSeq <= s.floor.Consumer || e.CSeq > s.delivered.Consumer {
		return
	}
	p.TS = e.TS - s.cfg.wait(p.Deliveries) + max(e.Delay, 0)
	out.Changed = true
	if e.Delay <= 0 {
		out.Due = append(out.Due, e.Seq)
	}
	out.event(Event{Kind: EventNak, SSeq: e.Seq, CSeq: e.CSeq, Deliveries: p.Deliveries})
}

// term acknowledges a message that must never be redelivered, with a
// terminated advisory (sent only when the term removed something; under
// ack policy all it acks everything up to the message, as nats-server).
func (s *State) term(e *Entry, out *Outcome) {
	var dc uint64 = 1
	if p, ok := s.pending[e.Seq]; ok {
		dc = p.Deliveries
	} else if m, ok := s.maxed[e.Seq]; ok {
		dc = m
	}
	s.ack(e, out)
	if out.Changed {
		out.event(Event{Kind: EventTerminated, SSeq: e.Seq, CSeq: e.CSeq, Deliveries: dc, Text: e.Text})
	}
}

// progress (+WPI) restarts a pending message's ack wait.
func (s *State) progress(e *Entry, out *Outcome) {
	if !s.ackable(e.Seq) {
		return
	}
	out.Reply = true
	if p, ok := s.pending[e.Seq]; ok && p.TS < e.TS {
		p.TS = e.TS
		out.Changed = true
	}
}
