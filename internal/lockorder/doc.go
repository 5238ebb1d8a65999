// Package lockorder holds the project's mutex types and the lock-order
// checker behind them.
//
// Every mutex in server/, internal/ and logger/ is a Mutex[C] or an
// RWMutex[C], where C names its lock class (classes.go: one class per
// struct's mu, with the rank LOCKS.md gives it). The class is part of the
// declaration, so a lock cannot be left unnamed.
//
// In a normal build the types are sync.Mutex and sync.RWMutex embedded in
// a struct with no other field: the methods are sync's, promoted and
// inlined, and cost nothing more.
//
// In a race build (go test -race sets the race tag) the checker runs
// unless the nolockorder tag is given. Each goroutine's held locks are
// kept (the goroutine is found by its id, read from the runtime's g at an
// offset found once against runtime.Stack, goid_fast.go), and before a
// lock is taken the checker verifies, for every lock the
// goroutine already holds, that the held class's rank is lower than the
// new one's. A violation — an acquisition against the rank order, a class
// nested in itself, or a cycle in the graph of observed class→class
// edges — is reported with the stack of the offending acquisition and the
// stacks where the edges closing the cycle were first seen, and ends the
// process (SetHandler replaces that, for the checker's own tests). The
// check runs before blocking, so an inversion is reported even when the
// test run never interleaves the two goroutines into an actual deadlock.
//
// The checker's own bookkeeping is hidden from the race detector
// (runtime.RaceDisable around it, go:norace functions): its internal
// mutexes would otherwise create happens-before edges between unrelated
// goroutines and hide real data races.
package lockorder
