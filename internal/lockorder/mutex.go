//go:build !race || nolockorder

package lockorder

import "sync"

// Enabled reports whether this build checks lock order.
const Enabled = false

// Mutex is a sync.Mutex of lock class C. In this build it is exactly a
// sync.Mutex: the methods are sync's, promoted.
type Mutex[C Class] struct{ sync.Mutex }

// RWMutex is a sync.RWMutex of lock class C, exactly a sync.RWMutex here.
type RWMutex[C Class] struct{ sync.RWMutex }

// SetHandler does nothing in this build (nothing is checked).
func SetHandler(f func(msg string)) (restore func()) { return func() {} }

// Violations is empty in this build.
func Violations() []string { return nil }

// Edges is empty in this build.
func Edges() []string { return nil }
