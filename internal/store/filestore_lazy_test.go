package store

import (
	"testing"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// blockFiles counts the block files in the store's directory.
func blockFiles(h *fsHarness) int { return len(h.files(".blk")) }

// A new store creates no block file at the open: the first flush does
// (here a Sync). A stream created and never written costs no inode, and a
// replicated stream's creation one less on every server.
func TestFileStoreFirstBlockMadeByFirstFlush(t *testing.T) {
	h := newMemHarness(t, FileStoreConfig{BlockSize: 1024}, StoreLimits{})
	if n := blockFiles(h); n != 0 {
		t.Fatalf("a new store made %d block files; want none before its first flush", n)
	}
	if _, err := h.fs.StoreMsg("a", nil, []byte("one"), 1); err != nil {
		t.Fatal(err)
	}
	if n := blockFiles(h); n != 0 {
		t.Fatalf("a buffered message made %d block files", n)
	}
	if err := h.fs.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := blockFiles(h); n != 1 {
		t.Fatalf("after the first Sync: %d block files, want 1", n)
	}
	want := cloneStore(t, h.fs)
	h.crash(nil) // the Sync made the file's entry durable (directory synced)
	compareStores(t, h.fs, want, "after a power loss following the first Sync")
}

// A new store whose block file was never made survives what a stream's
// life can do to it before its first message: a power loss, a clean stop
// (the checkpoint then lists the block: its file is made first), a Sync
// with nothing stored, skipped sequences (a stream's first_seq), a purge
// and a linked snapshot; each reopens or restores without a checkpoint
// mismatch and with the same state.
func TestFileStoreWithoutBlockFile(t *testing.T) {
	steps := []struct {
		name string
		do   func(t *testing.T, h *fsHarness)
	}{
		{"power loss", func(t *testing.T, h *fsHarness) { h.crash(nil) }},
		{"stop", func(t *testing.T, h *fsHarness) { h.restart() }},
		{"empty sync then power loss", func(t *testing.T, h *fsHarness) {
			if err := h.fs.Sync(); err != nil {
				t.Fatal(err)
			}
			h.crash(nil)
		}},
		{"skip then sync then power loss", func(t *testing.T, h *fsHarness) {
			if err := h.fs.SkipMsgs(41); err != nil {
				t.Fatal(err)
			}
			if err := h.fs.Sync(); err != nil {
				t.Fatal(err)
			}
			h.crash(nil)
			if st := h.fs.State(); st.FirstSeq != 42 || st.LastSeq != 41 {
				t.Fatalf("after the crash the store is at %d..%d, want 42..41", st.FirstSeq, st.LastSeq)
			}
		}},
		{"skip then stop", func(t *testing.T, h *fsHarness) {
			if err := h.fs.SkipMsgs(41); err != nil {
				t.Fatal(err)
			}
			h.restart()
		}},
		{"purge then stop", func(t *testing.T, h *fsHarness) {
			if _, err := h.fs.Purge(); err != nil {
				t.Fatal(err)
			}
			h.restart()
		}},
		{"snapshot", func(t *testing.T, h *fsHarness) {
			s, err := h.fs.SnapshotTo("/data/snap")
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Write(); err != nil {
				t.Fatal(err)
			}
			want := cloneStore(t, h.fs)
			restored := restoreForTest(t, h, "/data/snap", "restored")
			compareStores(t, restored, want, "store restored from a snapshot of a new store")
			restored.Stop()
		}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			h := newMemHarness(t, FileStoreConfig{BlockSize: 1024}, StoreLimits{})
			if n := blockFiles(h); n != 0 {
				t.Fatalf("a new store made %d block files", n)
			}
			st.do(t, h)
			if h.fs.ckptMismatch {
				t.Fatal("the checkpoint did not match the block files")
			}
			if l := h.logs.take(); len(l) > 0 {
				t.Fatalf("logged: %v", l)
			}
			want := cloneStore(t, h.fs)
			if _, err := h.fs.StoreMsg("a", nil, []byte("after"), 2); err != nil {
				t.Fatal(err)
			}
			if err := h.fs.Sync(); err != nil {
				t.Fatal(err)
			}
			_, _ = want.StoreMsg("a", nil, []byte("after"), 2)
			h.crash(nil)
			compareStores(t, h.fs, want, "a message stored and synced after it, then a power loss")
			h.fs.Stop()
		})
	}
}

// A store opened New (a replica's: its directory just emptied) makes no
// directory at the open; its first flush makes the directory and the
// block file, and a Sync then makes the messages durable in it. Opened
// New over a directory that is there after all, it recovers it as usual.
func TestFileStoreNewMakesDirAtFirstFlush(t *testing.T) {
	m := vfs.NewMem()
	dir := "/data/S/msgs"
	ops := 0
	m.InjectError(func(op, name string) error {
		if op != "stat" {
			ops++
		}
		return nil
	})
	fs := mustOpenFileStore(t, m, dir, FileStoreConfig{BlockSize: 1024, New: true}, StoreLimits{})
	if ops != 0 {
		t.Fatalf("the open of a new store made %d file system operations besides a stat", ops)
	}
	if _, err := m.Stat("/data/S"); err == nil {
		t.Fatal("the open of a new store made its directory")
	}
	if _, err := fs.StoreMsg("a", nil, []byte("one"), 1); err != nil {
		t.Fatal(err)
	}
	if err := fs.Sync(); err != nil {
		t.Fatal(err)
	}
	m.InjectError(nil)
	if ents, err := m.ReadDir(dir); err != nil || len(ents) != 1 {
		t.Fatalf("after the first Sync the directory holds %v (%v), want the block file", ents, err)
	}
	want := cloneStore(t, fs)
	m.Kill() // the process dies; what it wrote stays
	again := mustOpenFileStore(t, m, dir, FileStoreConfig{BlockSize: 1024, New: true}, StoreLimits{})
	compareStores(t, again, want, "a store opened New over its directory")
	again.Stop()
}
