//go:build race && !nolockorder

package lockorder

import (
	"sync"
	"unsafe"
)

// Enabled reports whether this build checks lock order.
const Enabled = true

// Mutex is a sync.Mutex of lock class C whose acquisitions are checked.
type Mutex[C Class] struct{ mu sync.Mutex }

func (m *Mutex[C]) Lock() {
	var c C
	acquire(c.id(), unsafe.Pointer(m))
	m.mu.Lock()
}

func (m *Mutex[C]) Unlock() {
	release(unsafe.Pointer(m))
	m.mu.Unlock()
}

// RWMutex is a sync.RWMutex of lock class C whose acquisitions, shared or
// exclusive, are checked alike: a reader waits behind a waiting writer,
// so a read lock can deadlock as a write lock can.
type RWMutex[C Class] struct{ mu sync.RWMutex }

func (m *RWMutex[C]) Lock() {
	var c C
	acquire(c.id(), unsafe.Pointer(m))
	m.mu.Lock()
}

func (m *RWMutex[C]) Unlock() {
	release(unsafe.Pointer(m))
	m.mu.Unlock()
}

func (m *RWMutex[C]) RLock() {
	var c C
	acquire(c.id(), unsafe.Pointer(m))
	m.mu.RLock()
}

func (m *RWMutex[C]) RUnlock() {
	release(unsafe.Pointer(m))
	m.mu.RUnlock()
}
