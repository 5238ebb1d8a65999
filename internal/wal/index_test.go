package wal

import (
	"math/rand"
	"testing"
)

// The index of a short log holds a small chunk, grows by doubling to full
// chunks, and a lone chunk that compaction left nearly empty is copied into a
// small one; every position keeps its location through all of it.
func TestLocIndexGrowsAndShrinks(t *testing.T) {
	var x locIndex
	var ref []int64
	check := func() {
		t.Helper()
		if x.len() != len(ref) {
			t.Fatalf("len %d, want %d", x.len(), len(ref))
		}
		for k, off := range ref {
			if got := x.at(k).off; got != off {
				t.Fatalf("position %d: off %d, want %d", k, got, off)
			}
		}
	}
	next := int64(0)
	push := func(n int) {
		for i := 0; i < n; i++ {
			x.push(entLoc{off: next})
			ref = append(ref, next)
			next++
		}
	}
	push(3)
	if c := cap(x.chunks[0]); c != locFirst {
		t.Fatalf("a short log's chunk holds %d locations, want %d", c, locFirst)
	}
	rng := rand.New(rand.NewSource(1))
	for round := 0; round < 200; round++ {
		push(rng.Intn(3 * locChunk / 2))
		check()
		if k := rng.Intn(x.len() + 1); k < x.len() {
			x.dropFront(k)
			ref = ref[k:]
		}
		check()
		if round%7 == 0 && x.len() > 0 {
			n := rng.Intn(x.len())
			x.truncate(n)
			ref = ref[:n]
			check()
		}
	}
	push(2 * locChunk)
	x.dropFront(x.len() - 5)
	ref = ref[len(ref)-5:]
	check()
	if len(x.chunks) != 1 || cap(x.chunks[0]) > locFirst {
		t.Fatalf("after compaction to 5 entries: %d chunks, capacity %d, want one of at most %d",
			len(x.chunks), cap(x.chunks[0]), locFirst)
	}
}
