package store

import "math/bits"

// seqBits is a bitmap over a block's sequence range: bit i stands for
// sequence first+i and is set when that sequence is not a live message
// (removed, erased, lost or never written).
type seqBits struct {
	words []uint64
	n     uint64 // number of bits in use
	ones  uint64 // number of bits set
}

// grow extends the bitmap to n bits; new bits are clear.
func (s *seqBits) grow(n uint64) {
	if n <= s.n {
		return
	}
	need := int((n + 63) / 64)
	for len(s.words) < need {
		s.words = append(s.words, 0)
	}
	s.n = n
}

func (s *seqBits) set(i uint64) {
	if i < s.n && s.words[i/64]&(1<<(i%64)) == 0 {
		s.words[i/64] |= 1 << (i % 64)
		s.ones++
	}
}

// has reports whether bit i is set; bits past the end count as set.
func (s *seqBits) has(i uint64) bool {
	return i >= s.n || s.words[i/64]&(1<<(i%64)) != 0
}

// nextClear returns the first clear bit at or after i, or n when none.
func (s *seqBits) nextClear(i uint64) uint64 {
	for i < s.n {
		w := ^s.words[i/64] >> (i % 64)
		if w != 0 {
			i += uint64(bits.TrailingZeros64(w))
			return min(i, s.n)
		}
		i = (i/64 + 1) * 64
	}
	return s.n
}

// clearFrom counts the clear bits at or after i: at once when no bit is
// set, else by counting the shorter side of i (a consumer asks this at
// every delivery, i moving through the block).
func (s *seqBits) clearFrom(i uint64) uint64 {
	if i >= s.n {
		return 0
	}
	if s.ones == 0 {
		return s.n - i
	}
	if i < s.n/2 {
		return s.n - s.ones - (i - s.onesIn(0, i))
	}
	return s.n - i - s.onesIn(i, s.n)
}

// onesIn counts the set bits in [lo, hi).
func (s *seqBits) onesIn(lo, hi uint64) uint64 {
	var set int
	for w := lo / 64; w*64 < hi; w++ {
		x := s.words[w]
		if w == lo/64 {
			x &= ^uint64(0) << (lo % 64)
		}
		if (w+1)*64 > hi {
			x &= 1<<(hi%64) - 1
		}
		set += bits.OnesCount64(x)
	}
	return uint64(set)
}

// prevClear returns the last clear bit at or before i, or -1 when none.
func (s *seqBits) prevClear(i int64) int64 {
	if i >= int64(s.n) {
		i = int64(s.n) - 1
	}
	for i >= 0 {
		w := ^s.words[i/64] << (63 - uint64(i)%64)
		if w != 0 {
			return i - int64(bits.LeadingZeros64(w))
		}
		i = (i/64)*64 - 1
	}
	return -1
}

// runs lists the set bits as [start, length) runs.
func (s *seqBits) runs() [][2]uint64 {
	var out [][2]uint64
	for i := uint64(0); i < s.n; {
		if !s.has(i) {
			i = s.nextSet(i)
			continue
		}
		j := s.nextClear(i)
		out = append(out, [2]uint64{i, j - i})
		i = j
	}
	return out
}

// nextSet returns the first set bit at or after i, or n when none.
func (s *seqBits) nextSet(i uint64) uint64 {
	for i < s.n {
		w := s.words[i/64] >> (i % 64)
		if w != 0 {
			return min(i+uint64(bits.TrailingZeros64(w)), s.n)
		}
		i = (i/64 + 1) * 64
	}
	return s.n
}

func (s *seqBits) clone() seqBits {
	return seqBits{words: append([]uint64(nil), s.words...), n: s.n, ones: s.ones}
}
