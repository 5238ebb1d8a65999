package store

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/testutil/faultfs"
	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// returnsSoon runs fn and fails the test if it does not return in time.
func returnsSoon(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return: the store's mutex stayed locked after the panic", what)
	}
}

// mustPanic runs fn, which must panic.
func mustPanic(t *testing.T, what string, fn func()) {
	t.Helper()
	panicked := false
	returnsSoon(t, what, func() {
		defer func() { panicked = recover() != nil }()
		fn()
	})
	if !panicked {
		t.Fatalf("%s did not panic", what)
	}
}

// TestFileStorePanicReleasesLocks: a panic in a write (or fsync) of the
// file store, under mu or syncer.mu, left the mutex locked (syncLocked
// took mu without defer), so every later call, Stop included, waited
// forever. The panic reaches the caller once; then reads (FastState, State) and Stop return,
// and writes fail: the store turned read-only, as after an I/O error.
func TestFileStorePanicReleasesLocks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sync  bool // panic in the fsync (outside mu) rather than the write
		first func(*fileStore) error
	}{
		{"sync-write", false, (*fileStore).Sync},
		{"sync-fsync", true, (*fileStore).Sync},
		{"flush-write", false, (*fileStore).Flush},
		{"stop-write", false, (*fileStore).Stop},
		{"stop-fsync", true, (*fileStore).Stop},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pfs := &faultfs.PanicFS{FS: vfs.NewMem()}
			fs := mustOpenFileStore(t, pfs, "/s", FileStoreConfig{BlockSize: 4096}, StoreLimits{})
			for i := 0; i < 5; i++ {
				if _, err := fs.StoreMsg("a", nil, []byte("x"), int64(i+1)); err != nil {
					t.Fatal(err)
				}
			}
			if tc.sync {
				pfs.Sync.Store(true)
			} else {
				pfs.Write.Store(true)
			}
			mustPanic(t, tc.name, func() { _ = tc.first(fs) })
			returnsSoon(t, "FastState", func() {
				var st StreamState
				if fs.FastState(&st); st.LastSeq != 5 {
					t.Errorf("LastSeq %d, want 5", st.LastSeq)
				}
			})
			returnsSoon(t, "State", func() {
				if st := fs.State(); st.Msgs != 5 {
					t.Errorf("State.Msgs %d, want 5", st.Msgs)
				}
			})
			returnsSoon(t, "StoreMsg", func() {
				if _, err := fs.StoreMsg("a", nil, []byte("x"), 9); err == nil {
					t.Error("StoreMsg after the panic succeeded, want the store read-only")
				}
			})
			returnsSoon(t, "Stop", func() {
				if err := fs.Stop(); err == nil {
					t.Error("Stop after the panic returned no error")
				}
			})
		})
	}
}
