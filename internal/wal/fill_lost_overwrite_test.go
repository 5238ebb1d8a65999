package wal

import (
	"testing"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// Records written after a sync partly over the synced zero-filled
// tail and partly past it (a new fill). A power cut that loses the
// overwrite of the synced zeros but keeps the bytes written past the old
// file end (MemFS.CrashKeep keeping the appended bytes; on a disk, the
// newly allocated blocks reaching it and the overwritten one not) leaves
// zeros followed by valid frames: recovery must yield the synced log, not
// refuse to open it.
func TestWALZeroFillLostOverwriteKeptAppend(t *testing.T) {
	quiet := Options{Logf: func(string, ...any) {}}
	fs := vfs.NewMem()
	w := mustOpen(t, fs, memDir, quiet)
	mustAppend(t, w, batch(1, 20, 1))
	mustSync(t, w)
	seg := segPaths(t, fs, memDir)[0]
	synced := fileSize(t, fs, seg)
	end := activeEnd(t, w)
	// Enough records to reach well past the synced fill.
	var last uint64 = 20
	for activeEnd(t, w) < synced+4*(synced-end) {
		mustAppend(t, w, batch(last+1, last+20, 1))
		last += 20
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Logf("synced file %d bytes (frames to %d); unsynced frames to %d (index %d)", synced, end, activeEnd(t, w), last)
	fs.CrashKeep(func(_ string, n int) int { return n }) // every byte past the old end kept
	w2, err := Open(fs, memDir, quiet)
	if err != nil {
		t.Fatalf("recovery refuses the log: %v", err)
	}
	if w2.LastIndex() < 20 {
		t.Fatalf("log ends at %d, below the synced 20", w2.LastIndex())
	}
	w2.Close()
}

// TestZeroSector: which damaged stretches read as a lost sector write.
func TestZeroSector(t *testing.T) {
	filled := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = 0x5a
		}
		return b
	}
	zero := func(b []byte, lo, hi int) []byte {
		clear(b[lo:hi])
		return b
	}
	cases := []struct {
		name string
		data []byte
		from int64
		want bool
	}{
		{"no zeros", filled(2048), 100, false},
		{"aligned zero sector", zero(filled(2048), 512, 1024), 100, true},
		{"zero stretch not a whole sector", zero(filled(2048), 600, 1100), 100, false},
		{"zeros from the frame to its sector's end", zero(filled(2048), 100, 512), 100, true},
		{"too short to cover length and checksum", zero(filled(2048), 505, 512), 505, false},
		{"zeros in the valid frame's own sector", zero(filled(700), 600, 700), 600, false},
		{"zero sector ending where the valid frame starts", zero(filled(1024), 512, 1024), 100, true},
		{"only a partial last stretch", zero(filled(1100), 1024, 1100), 100, false},
	}
	for _, c := range cases {
		if got := zeroSector(c.data, c.from); got != c.want {
			t.Errorf("%s: zeroSector = %v, want %v", c.name, got, c.want)
		}
	}
}
