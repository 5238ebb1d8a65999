package consumer

// Retention is a stream's retention policy, as far as consumers matter.
type Retention uint8

// Retention policies.
const (
	LimitsRetention Retention = iota
	InterestRetention
	WorkQueueRetention
)

// Removable reports whether the stream message seq with subject subj may
// be removed given its consumers' applied states (deleted consumers are
// ignored):
//   - limits: never because of consumers;
//   - interest: once no consumer whose filter matches the message needs it
//     (acknowledged, below its floor; none matching: not kept at all);
//   - work queue: once the consumer that matches it has acknowledged it; a
//     message no consumer matches waits for one.
//
// It is a pure function of the states, so called at apply (after an ack,
// a delivery to an AckNone consumer, a consumer change) it removes the
// same messages at the same log index on every replica.
func Removable(ret Retention, seq uint64, subj string, consumers []*State) bool {
	if ret == LimitsRetention {
		return false
	}
	matched := false
	for _, c := range consumers {
		if !c.Exists() || !c.Matches(subj) {
			continue
		}
		matched = true
		if c.NeedsAck(seq, subj) {
			return false
		}
	}
	return matched || ret == InterestRetention
}

// AppendRemovable appends to dst those of cands (an Outcome's Acked) that
// may be removed now; subject looks a stored message's subject up and
// reports false for one no longer stored.
func AppendRemovable(dst []uint64, ret Retention, cands []uint64, subject func(uint64) (string, bool), consumers []*State) []uint64 {
	for _, seq := range cands {
		if subj, ok := subject(seq); ok && Removable(ret, seq, subj, consumers) {
			dst = append(dst, seq)
		}
	}
	return dst
}
