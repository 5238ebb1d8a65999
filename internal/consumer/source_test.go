package consumer

import "github.com/nats-io/nats-server/v2/internal/sublist"

// memSource is a brute-force stream for tests: a slice of messages, each
// a subject and a timestamp, some removed.
type memSource struct {
	first uint64 // first sequence ever kept (purges move it)
	subj  []string
	ts    []int64
	gone  []bool
}

func (m *memSource) add(subj string, ts int64) uint64 {
	m.subj, m.ts, m.gone = append(m.subj, subj), append(m.ts, ts), append(m.gone, false)
	if m.first == 0 {
		m.first = 1
	}
	return uint64(len(m.subj))
}

func (m *memSource) last() uint64 { return uint64(len(m.subj)) }

func (m *memSource) Bounds() (uint64, uint64) {
	if len(m.subj) == 0 {
		return 0, 0
	}
	for seq := m.first; seq <= m.last(); seq++ {
		if !m.gone[seq-1] {
			return seq, m.last()
		}
	}
	return m.last() + 1, m.last()
}

func (m *memSource) Contains(seq uint64) bool {
	return seq >= 1 && seq <= m.last() && !m.gone[seq-1]
}

func (m *memSource) subject(seq uint64) (string, bool) {
	if !m.Contains(seq) {
		return "", false
	}
	return m.subj[seq-1], true
}

func matchAny(subj string, filters []string) bool {
	if len(filters) == 0 {
		return true
	}
	for _, f := range filters {
		if sublist.MatchLiteral(subj, f) {
			return true
		}
	}
	return false
}

func (m *memSource) NumPending(from uint64, filters []string, lastPer bool) uint64 {
	var n uint64
	seen := map[string]bool{}
	for seq := m.last(); seq >= max(from, 1); seq-- {
		if !m.Contains(seq) || !matchAny(m.subj[seq-1], filters) {
			continue
		}
		if lastPer {
			if seen[m.subj[seq-1]] {
				continue
			}
			seen[m.subj[seq-1]] = true
		}
		n++
	}
	return n
}

func (m *memSource) LastMatching(filters []string) uint64 {
	for seq := m.last(); seq >= 1; seq-- {
		if m.Contains(seq) && matchAny(m.subj[seq-1], filters) {
			return seq
		}
	}
	return 0
}

func (m *memSource) SeqAtTime(ts int64) uint64 {
	for seq := uint64(1); seq <= m.last(); seq++ {
		if m.Contains(seq) && m.ts[seq-1] >= ts {
			return seq
		}
	}
	return m.last() + 1
}

// remove deletes messages from the stream.
func (m *memSource) remove(seqs ...uint64) {
	for _, s := range seqs {
		if s >= 1 && s <= m.last() {
			m.gone[s-1] = true
		}
	}
}

// ackFloorOf is the ack floor by definition, for checking the cache.
func ackFloorOf(s *State) SeqPair {
	if len(s.pending) == 0 {
		return s.delivered
	}
	var low uint64
	for seq := range s.pending {
		if low == 0 || seq < low {
			low = seq
		}
	}
	return SeqPair{Consumer: s.pending[low].CSeq - 1, Stream: low - 1}
}
