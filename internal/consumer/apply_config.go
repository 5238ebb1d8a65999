package consumer

// create makes the consumer, choosing where it starts from the store as
// it is at this log index. Creating an existing consumer with the same
// configuration changes nothing; with another one it is refused.
func (s *State) create(e *Entry, src Source, out *Outcome) {
	if e.Config == nil || e.Gen == 0 {
		out.Err = ErrBadEntry
		return
	}
	if s.Exists() {
		if !s.cfg.equal(e.Config) {
			out.Err = ErrExists
		}
		return
	}
	start := startSeq(e.Config, src)
	*s = State{cfg: e.Config.clone(), gen: e.Gen, created: e.TS}
	if e.Config.PauseUntil > e.TS {
		s.paused = e.Config.PauseUntil
	}
	s.delivered = SeqPair{Stream: start - 1}
	s.floor = s.delivered
	out.Changed, out.Interest = true, true
	out.event(Event{Kind: EventCreated})
}

// LastPerSubjectSource is a Source that also knows the first of the last
// messages of each subject matching filters (0 when none matches): a
// last_per_subject consumer starts there, as in nats-server. A Source
// without it starts such a consumer at the stream's first sequence.
type LastPerSubjectSource interface {
	FirstLastPerSubject(filters []string) uint64
}

// startSeq is the first stream sequence a new consumer may deliver, as
// nats-server chooses it. For last_per_subject it is the first of the last
// messages of each subject (the stream's last when none matches): which
// messages after it the consumer delivers is the leader's delivery cursor
// (leader-only state), the apply only sees them go by.
func startSeq(c *Config, src Source) uint64 {
	first, last := src.Bounds()
	var seq uint64
	switch {
	case c.OptStartSeq > 0:
		seq = c.OptStartSeq
	case c.DeliverPolicy == DeliverLastPerSubject:
		seq = first
		if lp, ok := src.(LastPerSubjectSource); ok && last > 0 {
			if seq = lp.FirstLastPerSubject(c.FilterSubjects); seq == 0 {
				seq = last
			}
		}
	case c.DeliverPolicy == DeliverAll:
		seq = first
	case c.DeliverPolicy == DeliverLast:
		seq = src.LastMatching(c.FilterSubjects)
	case c.DeliverPolicy == DeliverByStartTime:
		seq = src.SeqAtTime(c.OptStartTime)
	default: // DeliverNew
		seq = last + 1
	}
	switch {
	case first == 0 && c.OptStartSeq == 0:
		seq = 1
	case seq > last && c.OptStartSeq == 0:
		seq = last + 1
	case seq < first:
		seq = first
	}
	return max(seq, 1)
}

// update replaces the configuration. Deliveries the leader made for the
// old one are refused from now on (gen). A changed pause_until is a pause
// or a resume.
func (s *State) update(e *Entry, out *Outcome) {
	if e.Config == nil || e.Gen <= s.gen {
		out.Err = ErrBadEntry
		return
	}
	if !s.cfg.updatable(e.Config) {
		out.Err = ErrNotUpdatable
		return
	}
	if s.cfg.equal(e.Config) {
		return
	}
	old := s.cfg.PauseUntil
	s.cfg = e.Config.clone()
	s.gen = e.Gen
	out.Changed, out.Interest = true, true
	if s.cfg.PauseUntil != old {
		s.setPause(s.cfg.PauseUntil, e.TS, out)
	}
}

// delete ends the consumer. Entries still in flight for it are refused.
func (s *State) delete(out *Outcome) {
	*s = State{gen: s.gen, deleted: true}
	out.Changed, out.Interest = true, true
	out.event(Event{Kind: EventDeleted})
}

// pause applies OpPause (pause until e.Until; a time not after e.TS
// resumes) and OpResume: the pause API's resume (Until 0) always, the
// leader's pause timer (Until = the pause it saw) only when that pause is
// still the one in force and has passed at e.TS.
//
// The pause API's entries (OpPause, OpResume with Until 0) carry the
// configuration with the new pause_until in Config, set by the caller at
// apply from the configuration in force (not encoded, as Gen): it replaces
// the configuration, and a changed pause_until is told by an event even
// when the pause in force does not change (a pause_until already past),
// as nats-server tells every change of it.
func (s *State) pause(e *Entry, out *Outcome) {
	if e.Op == OpResume && e.Until != 0 && (e.Until != s.paused || e.Until > e.TS) {
		return
	}
	until := e.Until
	if e.Op == OpResume {
		until = 0
	}
	api := e.Config != nil && (e.Op == OpPause || e.Until == 0)
	if !api {
		s.setPause(until, e.TS, out)
		return
	}
	changed := e.Config.PauseUntil != s.cfg.PauseUntil
	if !s.cfg.equal(e.Config) {
		s.cfg = e.Config.clone()
		out.Changed = true
	}
	n := len(out.Events)
	s.setPause(until, e.TS, out)
	if changed && len(out.Events) == n {
		out.event(Event{Kind: EventResumed})
	}
}

func (s *State) setPause(until, ts int64, out *Outcome) {
	if until <= ts {
		until = 0
	}
	if until == s.paused {
		return
	}
	s.paused = until
	out.Changed = true
	if until > 0 {
		out.event(Event{Kind: EventPaused, Until: until})
	} else {
		out.event(Event{Kind: EventResumed})
	}
}

// pin applies OpPin (refused while another client is pinned) and OpUnpin
// (of that id, or of any when the id is empty).
func (s *State) pin(e *Entry, out *Outcome) {
	if e.Op == OpPin {
		if e.Text == "" {
			out.Err = ErrBadEntry
			return
		}
		if s.pinnedID != "" {
			if s.pinnedID != e.Text {
				out.Err = ErrPinned
			}
			return
		}
		s.pinnedID, s.pinnedTS = e.Text, e.TS
		out.Changed = true
		out.event(Event{Kind: EventPinned, Text: e.Text})
		return
	}
	if s.pinnedID == "" || (e.Text != "" && e.Text != s.pinnedID) {
		return
	}
	out.event(Event{Kind: EventUnpinned, Text: s.pinnedID})
	s.pinnedID, s.pinnedTS = "", 0
	out.Changed = true
}

// streamRemoved: these messages left the stream. Those pending are
// terminated with e.Text as the reason (nats-server's "Unacknowledged
// message was deleted" or "Message deleted by stream limits"); the floor
// moves over them.
func (s *State) streamRemoved(e *Entry, out *Outcome) {
	for _, seq := range e.Seqs {
		if p, ok := s.removePending(seq); ok {
			out.event(Event{Kind: EventTerminated, SSeq: seq, CSeq: p.CSeq, Deliveries: p.Deliveries, Text: e.Text})
			out.Changed = true
		}
		if _, ok := s.maxed[seq]; ok {
			delete(s.maxed, seq)
			out.Changed = true
		}
	}
	if out.Changed {
		s.refloor()
	}
}

// streamPurged: every message below e.Seq left the stream (purge,
// compaction). As nats-server, the consumer's delivered position moves up
// to the purge point and what was pending below it is dropped silently.
func (s *State) streamPurged(e *Entry, out *Outcome) {
	if e.Seq == 0 {
		return
	}
	for seq := range s.pending {
		if seq < e.Seq {
			delete(s.pending, seq)
			out.Changed = true
		}
	}
	for seq := range s.maxed {
		if seq < e.Seq {
			delete(s.maxed, seq)
			out.Changed = true
		}
	}
	if s.delivered.Stream < e.Seq-1 {
		s.delivered.Stream = e.Seq - 1
		out.Changed = true
	}
	if out.Changed {
		s.refloor()
	}
}
