package consumer

// NextDeadline is the earliest moment (unix ns) a pending message becomes
// due for redelivery, false when nothing is pending. It only reads: the
// leader arms its ack-wait timer with it and, when the timer fires,
// proposes an OpRedeliverDue the apply checks against the state.
func (s *State) NextDeadline() (int64, bool) {
	var best int64
	found := false
	for _, p := range s.pending {
		if d := p.TS + s.cfg.wait(p.Deliveries); !found || d < best {
			best, found = d, true
		}
	}
	return best, found
}
