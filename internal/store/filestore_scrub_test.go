package store

import (
	"os"
	"slices"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// scrubStore is a store of 200 messages of ~200 bytes in blocks of 4 KiB
// (about ten sealed blocks and an active one), on the in-memory FS.
func scrubStore(t *testing.T, compression string) (*fileStore, *vfs.MemFS) {
	mem := vfs.NewMem()
	fs := mustOpenFileStore(t, mem, "/s", FileStoreConfig{BlockSize: 4096, Compression: compression}, StoreLimits{})
	t.Cleanup(func() { fs.Stop() })
	for i := 0; i < 200; i++ {
		if _, err := fs.StoreMsg("a.b", nil, make([]byte, 200), int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := fs.Sync(); err != nil { // compresses sealed blocks under s2
		t.Fatal(err)
	}
	return fs, mem
}

// scrubPass checks every sealed block once and returns the missing
// messages, the blocks checked and the bytes read (counted by pace).
func scrubPass(t *testing.T, fs *fileStore) (missing []uint64, blocks []uint32, paced int64) {
	pace := func(n int) bool { paced += int64(n); return true }
	for from := uint32(0); ; {
		res, err := fs.ScrubNext(from, pace)
		if err != nil {
			t.Fatal(err)
		}
		if res.Done {
			return missing, blocks, paced
		}
		missing = append(missing, res.Missing...)
		blocks = append(blocks, res.Block)
		from = res.Block + 1
	}
}

func TestFileStoreScrubClean(t *testing.T) {
	for _, comp := range []string{"", "s2"} {
		fs, _ := scrubStore(t, comp)
		missing, blocks, paced := scrubPass(t, fs)
		if len(missing) != 0 || len(blocks) != len(fs.blocks)-1 || len(blocks) < 5 || paced == 0 {
			t.Fatalf("%q: missing %v, checked %v of %d blocks, %d bytes", comp, missing, blocks, len(fs.blocks), paced)
		}
		if slices.Contains(blocks, fs.active().index) {
			t.Fatalf("%q: the active block %d was scrubbed", comp, fs.active().index)
		}
	}
}

func TestFileStoreScrubFindsDamage(t *testing.T) {
	cases := map[string]func(t *testing.T, mem *vfs.MemFS, name string){
		"bitflip": func(t *testing.T, mem *vfs.MemFS, name string) {
			fi, err := mem.Stat(name)
			if err != nil {
				t.Fatal(err)
			}
			mem.FlipBit(name, fi.Size()/2, 3)
		},
		"truncate": func(t *testing.T, mem *vfs.MemFS, name string) {
			f, err := mem.OpenFile(name, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			fi, err := f.Stat()
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Truncate(fi.Size() / 2); err != nil {
				t.Fatal(err)
			}
		},
		"delete": func(t *testing.T, mem *vfs.MemFS, name string) {
			if err := mem.Remove(name); err != nil {
				t.Fatal(err)
			}
		},
	}
	for what, damage := range cases {
		for _, comp := range []string{"", "s2"} {
			fs, mem := scrubStore(t, comp)
			b := fs.blocks[2]
			damage(t, mem, blockName(fs.dir, b.index, b.compressed))
			missing, _, _ := scrubPass(t, fs)
			if len(missing) == 0 || missing[0] < b.first || missing[len(missing)-1] > b.last {
				t.Fatalf("%s %q: missing %v, want some of block %d (%d..%d)", what, comp, missing, b.index, b.first, b.last)
			}
			var st StreamState
			fs.FastState(&st)
			if st.Msgs != 200 || len(fs.lost.Msgs) != 0 {
				t.Fatalf("%s %q: the scrub changed the store: %+v, lost %v", what, comp, st, fs.lost.Msgs)
			}
		}
	}
}

// A stale block (an older copy: valid records, fewer of them) is found.
func TestFileStoreScrubStaleBlock(t *testing.T) {
	mem := vfs.NewMem()
	fs := mustOpenFileStore(t, mem, "/s", FileStoreConfig{BlockSize: 4096}, StoreLimits{})
	defer fs.Stop()
	var stale []byte
	for i := 0; i < 200; i++ {
		if _, err := fs.StoreMsg("a.b", nil, make([]byte, 200), int64(i)); err != nil {
			t.Fatal(err)
		}
		if i == 3 { // block 1 partly written
			if err := fs.flush(); err != nil {
				t.Fatal(err)
			}
			stale, _ = vfs.ReadFile(mem, blockName(fs.dir, fs.blocks[0].index, false))
		}
	}
	if len(stale) == 0 {
		t.Fatal("no stale copy")
	}
	if err := vfs.WriteFileAtomic(mem, blockName(fs.dir, fs.blocks[0].index, false), stale); err != nil {
		t.Fatal(err)
	}
	missing, _, _ := scrubPass(t, fs)
	if len(missing) == 0 || missing[0] != 5 {
		t.Fatalf("missing %v, want 5.. (the messages after the stale copy)", missing)
	}
}

// Damage to messages removed before the scrub is not reported: they need
// no record.
func TestFileStoreScrubIgnoresRemoved(t *testing.T) {
	fs, mem := scrubStore(t, "")
	b := fs.blocks[1]
	for seq := b.first; seq <= b.last; seq++ {
		if _, err := fs.RemoveMsg(seq); err != nil {
			t.Fatal(err)
		}
	}
	mem.FlipBit(blockName(fs.dir, b.index, false), 1000, 3)
	if missing, _, _ := scrubPass(t, fs); len(missing) != 0 {
		t.Fatalf("missing %v, want none (the block's messages were removed)", missing)
	}
}

// A pace that says stop ends the step with ErrScrubStopped.
func TestFileStoreScrubStops(t *testing.T) {
	fs, _ := scrubStore(t, "")
	if _, err := fs.ScrubNext(0, func(int) bool { return false }); err != ErrScrubStopped {
		t.Fatalf("err %v, want ErrScrubStopped", err)
	}
}
