//go:build race && !nolockorder

package lockorder

import (
	"runtime"
	"testing"
)

func BenchmarkGoid(b *testing.B) {
	for b.Loop() {
		goid()
	}
}

func BenchmarkRaceDisable(b *testing.B) {
	for b.Loop() {
		runtime.RaceDisable()
		runtime.RaceEnable()
	}
}

func BenchmarkGoidSlow(b *testing.B) {
	for b.Loop() {
		goidSlow()
	}
}

// The fast goroutine id agrees with the one runtime.Stack prints.
func TestGoid(t *testing.T) {
	if goidOffset < 0 {
		t.Log("goroutine id offset not found: ids are read from the stack")
	}
	done := make(chan [2]uint64)
	for range 20 {
		go func() { done <- [2]uint64{goid(), goidSlow()} }()
	}
	for range 20 {
		if p := <-done; p[0] != p[1] {
			t.Fatalf("goid %d, stack says %d", p[0], p[1])
		}
	}
}
