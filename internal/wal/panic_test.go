package wal

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/testutil/faultfs"
	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// TestWALPanicInSyncReleasesLock: a panic in Sync's write under mu (Sync
// took mu without defer) left mu locked, so the log's Close, and every
// reader, waited forever (a raft group's halt then hung the server's
// Shutdown). The panic still reaches the caller; the log turns read-only
// and closes.
func TestWALPanicInSyncReleasesLock(t *testing.T) {
	fs := &faultfs.PanicFS{FS: vfs.NewMem(), AtOnly: true}
	w := mustOpen(t, fs, memDir, Options{Logf: func(string, ...any) {}})
	mustAppend(t, w, batch(1, 5, 1))
	fs.Write.Store(true)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("Sync did not panic")
			}
		}()
		_ = w.Sync()
	}()
	done := make(chan error, 1)
	go func() {
		if w.LastIndex() != 5 {
			t.Error("LastIndex changed")
		}
		if err := w.Append(batch(6, 6, 1)); err == nil {
			t.Error("append to a log that panicked succeeded")
		}
		done <- w.Close()
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the log's mutex stayed locked after the panic")
	}
}
