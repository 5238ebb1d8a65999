//go:build race && !nolockorder && (amd64 || arm64)

package lockorder

import (
	"sync"
	"unsafe"
)

// Reading the goroutine id from runtime.Stack costs microseconds under
// the race detector, on every lock and unlock. Here it is read from the
// runtime's goroutine struct instead: getg (assembly) returns the current
// g, and the offset of its id is found once, at start, as the one offset
// where the struct holds the id runtime.Stack prints, in three
// goroutines. Should no single offset fit, goid falls back to the stack.

func getg() unsafe.Pointer

// goidOffset is the offset of the id in the runtime's g, or -1.
var goidOffset = findGoidOffset()

const gScan = 256 // bytes of g searched for the id (g is larger)

//go:norace
//go:nocheckptr
func findGoidOffset() int {
	const probes = 3
	var ids [probes]uint64
	var gs [probes][gScan / 8]uint64
	for i := range probes {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i] = goidSlow()
			g := getg()
			for off := range gs[i] {
				gs[i][off] = *(*uint64)(unsafe.Add(g, off*8))
			}
		}()
		wg.Wait()
	}
	found := -1
	for off := range gScan / 8 {
		fits := true
		for i := range probes {
			fits = fits && gs[i][off] == ids[i]
		}
		if fits {
			if found >= 0 {
				return -1 // ambiguous
			}
			found = off * 8
		}
	}
	return found
}

//go:norace
//go:nocheckptr
func goid() uint64 {
	if goidOffset < 0 {
		return goidSlow()
	}
	return *(*uint64)(unsafe.Add(getg(), goidOffset))
}
