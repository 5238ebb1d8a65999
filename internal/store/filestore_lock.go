package store

import "fmt"

// A panic while the file store holds a mutex (a bug, or a vfs that
// panics) must not leave that mutex locked: every method that takes mu or
// syncer.mu releases it with a deferred unlock or syncUnlock, so readers,
// Sync and Stop never wait for it forever. The store may be half changed
// by then, so it turns read-only as after an I/O error (werr, sticky),
// and the panic goes on to the caller.

// unlock releases mu (deferred by every method that takes it).
func (fs *fileStore) unlock() {
	if p := recover(); p != nil {
		fs.fail(fmt.Errorf("file store: panic: %v", p))
		fs.mu.Unlock()
		panic(p)
	}
	fs.mu.Unlock()
}

// syncUnlock releases syncer.mu (deferred by every method that takes it).
// mu is free here: whatever held it under syncer.mu released it with
// unlock.
func (fs *fileStore) syncUnlock() {
	if p := recover(); p != nil {
		fs.markPanicked(p)
		fs.syncer.mu.Unlock()
		panic(p)
	}
	fs.syncer.mu.Unlock()
}

// markPanicked makes a panic's error sticky.
func (fs *fileStore) markPanicked(p any) {
	fs.mu.Lock()
	defer fs.unlock()
	fs.fail(fmt.Errorf("file store: panic: %v", p))
}
