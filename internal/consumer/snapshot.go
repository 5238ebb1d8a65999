package consumer

import (
	"encoding/binary"
	"hash/fnv"
	"slices"
)

const snapshotVersion = 1

// AppendSnapshot appends the encoding of s to b: canonical (pending and
// the max-delivered set in ascending order), so equal states encode to
// equal bytes whatever their maps' history. The ack floor is not encoded:
// it is a function of the rest, recomputed on restore.
func (s *State) AppendSnapshot(b []byte) []byte {
	b = append(b, snapshotVersion)
	b = binary.AppendUvarint(b, s.gen)
	b = appendBool(b, s.deleted)
	b = binary.AppendVarint(b, s.created)
	b = appendConfig(b, &s.cfg)
	b = binary.AppendUvarint(b, s.delivered.Consumer)
	b = binary.AppendUvarint(b, s.delivered.Stream)
	for _, v := range [...]int64{s.lastDeliv, s.lastAck, s.paused, s.pinnedTS} {
		b = binary.AppendVarint(b, v)
	}
	b = appendString(b, s.pinnedID)
	seqs := s.sortedPending()
	b = binary.AppendUvarint(b, uint64(len(seqs)))
	var prev uint64
	for _, seq := range seqs {
		p := s.pending[seq]
		b = binary.AppendUvarint(b, seq-prev)
		b = binary.AppendUvarint(b, p.CSeq)
		b = binary.AppendUvarint(b, p.Deliveries)
		b = binary.AppendVarint(b, p.TS)
		prev = seq
	}
	maxed := make([]uint64, 0, len(s.maxed))
	for seq := range s.maxed {
		maxed = append(maxed, seq)
	}
	slices.Sort(maxed)
	b = binary.AppendUvarint(b, uint64(len(maxed)))
	prev = 0
	for _, seq := range maxed {
		b = binary.AppendUvarint(b, seq-prev)
		b = binary.AppendUvarint(b, s.maxed[seq])
		prev = seq
	}
	return b
}

// RestoreSnapshot decodes a snapshot made by AppendSnapshot (the whole of
// data) into a new State. Hostile input gets ErrCodec, never a panic, and
// allocations bounded by len(data); a snapshot whose parts contradict each
// other (a pending message above Delivered, sequences out of order, a
// delivery count of 0) is refused too.
func RestoreSnapshot(data []byte) (*State, error) {
	r := &reader{b: data}
	if r.byte() != snapshotVersion {
		return nil, ErrCodec
	}
	s := &State{gen: r.uvarint(), deleted: r.bool(), created: r.varint()}
	if cfg := readConfig(r); cfg != nil {
		s.cfg = *cfg
	}
	s.delivered = SeqPair{Consumer: r.uvarint(), Stream: r.uvarint()}
	s.lastDeliv, s.lastAck, s.paused, s.pinnedTS = r.varint(), r.varint(), r.varint(), r.varint()
	s.pinnedID = r.string()
	if !s.readPending(r) || !s.readMaxed(r) || r.bad || len(r.b) != 0 {
		return nil, ErrCodec
	}
	s.order = s.sortedPending()
	s.refloor()
	return s, nil
}

func (s *State) readPending(r *reader) bool {
	n := r.count(4)
	if n > 0 {
		s.pending = make(map[uint64]*Pending, n)
	}
	var seq uint64
	for range n {
		d := r.uvarint()
		p := &Pending{CSeq: r.uvarint(), Deliveries: r.uvarint(), TS: r.varint()}
		if d == 0 || seq+d < seq || seq+d > s.delivered.Stream || p.CSeq == 0 ||
			p.CSeq > s.delivered.Consumer || p.Deliveries == 0 || r.bad {
			return false
		}
		seq += d
		s.pending[seq] = p
	}
	return !r.bad
}

func (s *State) readMaxed(r *reader) bool {
	n := r.count(2)
	if n > 0 {
		s.maxed = make(map[uint64]uint64, n)
	}
	var seq uint64
	for range n {
		d, dc := r.uvarint(), r.uvarint()
		if d == 0 || seq+d < seq || seq+d > s.delivered.Stream || dc == 0 || r.bad {
			return false
		}
		seq += d
		if _, ok := s.pending[seq]; ok {
			return false
		}
		s.maxed[seq] = dc
	}
	return !r.bad
}

// Digest is a hash of the whole state, the same on every replica that
// applied the same entries: it hashes the canonical snapshot and the ack
// floor (a cache, so a wrong incremental update shows as a difference).
func (s *State) Digest() uint64 {
	h := fnv.New64a()
	b := s.AppendSnapshot(make([]byte, 0, 64+24*len(s.pending)))
	b = binary.AppendUvarint(b, s.floor.Consumer)
	b = binary.AppendUvarint(b, s.floor.Stream)
	h.Write(b)
	return h.Sum64()
}
