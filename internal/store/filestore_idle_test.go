package store

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// A Sync that finds nothing written since the previous one closes the
// active block's file; the next write, erase, seal or purge reopens it (or
// does without it), and every message is there after a reopen.
func TestFileStoreIdleClosesActiveFile(t *testing.T) {
	for _, fsys := range []vfs.FS{vfs.Default, vfs.NewMem()} {
		dir := t.TempDir()
		cfg := FileStoreConfig{BlockSize: 1024}
		fs := mustOpenFileStore(t, fsys, dir, cfg, StoreLimits{})
		store := func(n int) {
			t.Helper()
			for i := 0; i < n; i++ {
				if _, err := fs.StoreMsg(fmt.Sprintf("s.%d", i%3), nil, []byte("payload payload"), 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		idle := func() {
			t.Helper()
			for i := 0; i < 2; i++ {
				if err := fs.Sync(); err != nil {
					t.Fatal(err)
				}
			}
			fs.mu.Lock()
			open := fs.aw.f != nil
			fs.mu.Unlock()
			if open {
				t.Fatal("the active block's file is open after two Syncs with no write between")
			}
		}
		store(5)
		idle()
		store(40) // seals blocks on the way
		idle()
		if _, err := fs.EraseMsg(44); err != nil {
			t.Fatal(err)
		}
		idle()
		if _, err := fs.RemoveMsg(2); err != nil {
			t.Fatal(err)
		}
		idle()
		store(1)
		if err := fs.Stop(); err != nil {
			t.Fatal(err)
		}
		fs = mustOpenFileStore(t, fsys, dir, cfg, StoreLimits{})
		st := fs.State()
		if st.Msgs != 44 || st.LastSeq != 46 {
			t.Fatalf("after reopen: %+v, want 44 messages up to 46", st)
		}
		if _, err := fs.LoadMsg(44, nil); err == nil {
			t.Fatal("the erased message is back")
		}
		if sm, err := fs.LoadMsg(46, nil); err != nil || string(sm.Msg) != "payload payload" {
			t.Fatalf("the message written after the idle close: %v %v", sm, err)
		}
		idle()
		if _, err := fs.Purge(); err != nil {
			t.Fatal(err)
		}
		store(2)
		fs.Stop()
		fs = mustOpenFileStore(t, fsys, dir, cfg, StoreLimits{})
		if st := fs.State(); st.Msgs != 2 || st.LastSeq != 48 {
			t.Fatalf("after purge and reopen: %+v", st)
		}
		fs.Stop()
	}
}
