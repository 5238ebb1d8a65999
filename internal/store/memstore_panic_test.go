package store

import "testing"

// panicWatcher panics when asked about a removal: a bug under the memory
// store's lock, in the middle of a write.
type panicWatcher struct{}

func (panicWatcher) Wants(uint64) bool { panic("test: watcher bug") }
func (panicWatcher) Save(*StoreMsg)    {}
func (panicWatcher) Abandon()          {}

// TestMemStorePanicReleasesLock: a panic under the memory store's lock
// (here in StoreMsg, whose limit left a message half removed) reaches the
// caller once; then reads and Stop return, and writes fail: the store
// turned read-only, as the file store does. Without, the store went on
// taking writes over the half-changed state.
func TestMemStorePanicReleasesLock(t *testing.T) {
	ms := newMemStore(StoreLimits{MaxMsgs: 2})
	for i := 0; i < 2; i++ {
		if _, err := ms.StoreMsg("a", nil, []byte("x"), int64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	ms.SetRemovalWatcher(panicWatcher{})
	mustPanic(t, "StoreMsg", func() { _, _ = ms.StoreMsg("a", nil, []byte("x"), 3) })
	ms.SetRemovalWatcher(nil)
	returnsSoon(t, "reads", func() {
		var st StreamState
		ms.FastState(&st)
		_ = ms.State()
		_, _ = ms.LoadLastMsg("a", nil)
	})
	if _, err := ms.StoreMsg("a", nil, []byte("y"), 4); err == nil {
		t.Fatal("StoreMsg took a write after the panic")
	}
	if _, err := ms.RemoveMsg(1); err == nil {
		t.Fatal("RemoveMsg took a write after the panic")
	}
	if _, err := ms.Purge(); err == nil {
		t.Fatal("Purge took a write after the panic")
	}
	returnsSoon(t, "Stop", func() { _ = ms.Stop() })
}
