package raft

import "testing"

// The ring of appends in flight starts empty and grows with them, wrapped or
// not, keeping their order, up to its size; the bytes count throughout.
func TestInflightsGrowInOrder(t *testing.T) {
	in := newInflights(10, 0)
	if in.buf != nil {
		t.Fatalf("a new ring holds %d slots, want none", len(in.buf))
	}
	next, want := uint64(1), []uint64{}
	add := func(n int) {
		for i := 0; i < n; i++ {
			in.add(next, 2)
			want = append(want, next)
			next++
		}
	}
	check := func() {
		t.Helper()
		if in.count != len(want) || in.bytes != 2*uint64(len(want)) {
			t.Fatalf("count %d bytes %d, want %d and %d", in.count, in.bytes, len(want), 2*len(want))
		}
		for k, w := range want {
			if got := in.buf[(in.start+k)%len(in.buf)]; got != w {
				t.Fatalf("slot %d holds %d, want %d", k, got, w)
			}
		}
	}
	add(3)
	in.freeLE(2) // the ring wraps on the next adds
	want = want[2:]
	add(3)
	check()
	add(6)
	check()
	if !in.full() || len(in.buf) != 10 {
		t.Fatalf("full %v with %d slots, want full at 10", in.full(), len(in.buf))
	}
	in.freeFirst()
	want = want[1:]
	add(1)
	check()
}
