//go:build race && !nolockorder

package lockorder

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// collect replaces the handler for one test and returns what it received.
func collect(t *testing.T) func() []string {
	var mu sync.Mutex
	var got []string
	t.Cleanup(SetHandler(func(msg string) {
		mu.Lock()
		got = append(got, msg)
		mu.Unlock()
	}))
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// run runs f on its own goroutine and waits for it.
func run(f func()) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); f() }()
	wg.Wait()
}

// Two classes taken in both orders, on two goroutines, one after the
// other (never an actual deadlock): the second order is reported, naming
// the cycle and the stack where the first order was seen.
func TestInversionReported(t *testing.T) {
	got := collect(t)
	var a Mutex[Test1]
	var b RWMutex[Test2]
	run(func() {
		a.Lock()
		b.Lock()
		b.Unlock()
		a.Unlock()
	})
	if v := got(); len(v) != 0 {
		t.Fatalf("allowed order reported: %q", v)
	}
	run(func() {
		b.RLock()
		a.Lock()
		a.Unlock()
		b.RUnlock()
	})
	v := got()
	if len(v) != 1 {
		t.Fatalf("got %d reports, want 1: %q", len(v), v)
	}
	_, r1 := Rank[Test1]()
	_, r2 := Rank[Test2]()
	for _, want := range []string{
		fmt.Sprintf("test1 (rank %d) taken while holding test2 (rank %d), against the rank order", r1, r2),
		"cycle: test2 → test1 → test2",
		"test2 → test1 here:",
		"test1 → test2 first seen:",
		"lockorder.TestInversionReported.func1", // the first order's stack
		"lockorder.TestInversionReported.func2", // the inverted one's
	} {
		if !strings.Contains(v[0], want) {
			t.Errorf("report lacks %q:\n%s", want, v[0])
		}
	}
}

// The allowed order, nested three deep, on many goroutines at once, and
// locks released out of order: nothing is reported.
func TestAllowedOrderQuiet(t *testing.T) {
	got := collect(t)
	var a Mutex[Test1]
	var b RWMutex[Test2]
	var c Mutex[Test3]
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				a.Lock()
				b.RLock()
				c.Lock()
				b.RUnlock() // out of order
				c.Unlock()
				a.Unlock()
				b.Lock()
				c.Lock()
				c.Unlock()
				b.Unlock()
			}
		}()
	}
	wg.Wait()
	if v := got(); len(v) != 0 {
		t.Fatalf("allowed order reported: %q", v)
	}
}

// A class nested in itself (two instances) and a lock taken again by its
// holder are reported.
func TestSameClassReported(t *testing.T) {
	got := collect(t)
	var a, b Mutex[Test3]
	run(func() {
		a.Lock()
		b.Lock()
		b.Unlock()
		a.Unlock()
	})
	var rw RWMutex[Test3]
	run(func() {
		rw.RLock()
		rw.RLock()
		rw.RUnlock()
		rw.RUnlock()
	})
	v := got()
	if len(v) != 2 || !strings.Contains(v[0], "taken while holding another test3") ||
		!strings.Contains(v[1], "taken again by the goroutine that holds it") {
		t.Fatalf("reports: %q", v)
	}
}

// A lock released by another goroutine than the one that took it is
// forgotten for its taker: nothing stays held.
func TestUnlockElsewhere(t *testing.T) {
	got := collect(t)
	var a Mutex[Test2]
	var b Mutex[Test1]
	a.Lock()
	run(a.Unlock)
	b.Lock() // would be test1 under test2 if a were still counted
	b.Unlock()
	if v := got(); len(v) != 0 {
		t.Fatalf("reports: %q", v)
	}
}
