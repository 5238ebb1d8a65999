package store

import "fmt"

// A panic while the memory store holds its mutex (a bug, in the store or
// in a removal watcher it calls) must not leave the mutex locked: every
// method releases it with a deferred unlock (or RUnlock), so readers and
// Stop never wait for it forever. The store may be half changed by then
// (a message stored but not indexed), so it turns read-only, as the file
// store does (filestore_lock.go), and the panic goes on to the caller.

// unlock releases mu (deferred by every method that takes it to write).
func (ms *memStore) unlock() {
	if p := recover(); p != nil {
		if ms.werr == nil {
			ms.werr = &WriteFailure{Err: fmt.Errorf("memory store: panic: %v", p)}
		}
		ms.mu.Unlock()
		panic(p)
	}
	ms.mu.Unlock()
}

// writable is nil when the store takes a new message (mu held); the
// other writes check werr alone (a stopped store took them before).
func (ms *memStore) writable() error {
	if ms.closed {
		return ErrStoreClosed
	}
	return ms.werr
}
