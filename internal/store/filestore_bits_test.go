package store

import (
	"math/rand/v2"
	"testing"
)

// TestSeqBitsClearFrom checks clearFrom (which counts from whichever side
// of i is shorter, using the count of set bits) against a bit-by-bit count,
// over random bitmaps of many lengths and densities, also after growing.
func TestSeqBitsClearFrom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	naive := func(s *seqBits, i uint64) uint64 {
		var c uint64
		for ; i < s.n; i++ {
			if !s.has(i) {
				c++
			}
		}
		return c
	}
	for round := 0; round < 300; round++ {
		var s seqBits
		n := uint64(r.IntN(700))
		s.grow(n)
		density := r.Float64()
		for k := uint64(0); k < n; k++ {
			if r.Float64() < density {
				s.set(k)
				if r.IntN(4) == 0 {
					s.set(k) // setting a set bit again counts once
				}
			}
		}
		if round%3 == 0 {
			s.grow(n + uint64(r.IntN(200)))
		}
		c := s.clone()
		for _, b := range []*seqBits{&s, &c} {
			for i := uint64(0); i <= b.n+2; i++ {
				if got, want := b.clearFrom(i), naive(b, i); got != want {
					t.Fatalf("round %d: n=%d ones=%d clearFrom(%d) = %d, want %d", round, b.n, b.ones, i, got, want)
				}
			}
		}
	}
}
