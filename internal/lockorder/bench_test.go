package lockorder

import (
	"sync"
	"testing"
)

// The cost of a lock and unlock: in a normal build the two should match
// (Mutex is sync.Mutex); under -race the difference is the checker's.
func BenchmarkSyncMutex(b *testing.B) {
	var m sync.Mutex
	for b.Loop() {
		m.Lock()
		m.Unlock()
	}
}

func BenchmarkMutex(b *testing.B) {
	var m Mutex[Test1]
	for b.Loop() {
		m.Lock()
		m.Unlock()
	}
}

func BenchmarkMutexNested(b *testing.B) {
	var m1 Mutex[Test1]
	var m2 RWMutex[Test2]
	for b.Loop() {
		m1.Lock()
		m2.RLock()
		m2.RUnlock()
		m1.Unlock()
	}
}
