package wal

import (
	"errors"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// Salvage keeps the valid prefix of a log damaged in a sealed segment or in
// the middle of the last one, and empties a log missing a segment.

func TestWALSalvageKeepsPrefix(t *testing.T) {
	for _, seg := range []int{1, -1} { // a sealed segment, the last one
		fs := vfsWithLog(t, 200)
		segs := segPaths(t, fs, memDir)
		if seg < 0 {
			seg = len(segs) - 1
		}
		fs.FlipBit(segs[seg], fileSize(t, fs, segs[seg])/2, 4)
		if _, err := Open(fs, memDir, salvageOpts); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("segment %d flipped: open gave %v", seg, err)
		}
		what, err := Salvage(fs, memDir, salvageOpts)
		if err != nil {
			t.Fatal(err)
		}
		t.Log(what)
		w := mustOpen(t, fs, memDir, salvageOpts)
		last := w.LastIndex()
		if last == 0 || last >= 200 {
			t.Fatalf("segment %d flipped: salvaged log ends at %d", seg, last)
		}
		checkLog(t, w, 1, last, term1)
		if n := countSegments(t, fs, memDir); n != seg+1 {
			t.Fatalf("%d segments left, want %d", n, seg+1)
		}
		mustAppend(t, w, batch(last+1, last+10, 2)) // the log goes on from its prefix
		mustSync(t, w)
		w.Close()
		w = mustOpen(t, fs, memDir, salvageOpts)
		checkLog(t, w, 1, last+10, func(i uint64) uint64 { return 1 + min(1, i/(last+1)) })
		w.Close()
	}
}

func TestWALSalvageMissingSegmentEmpties(t *testing.T) {
	fs := vfsWithLog(t, 200)
	segs := segPaths(t, fs, memDir)
	fs.Remove(segs[1])
	if _, err := Open(fs, memDir, salvageOpts); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open gave %v", err)
	}
	if _, err := Salvage(fs, memDir, salvageOpts); err != nil {
		t.Fatal(err)
	}
	w := mustOpen(t, fs, memDir, salvageOpts)
	if w.LastIndex() != 0 {
		t.Fatalf("log ends at %d, want empty", w.LastIndex())
	}
	w.Close()
}

var salvageOpts = Options{SegmentSize: 2048}

// vfsWithLog is a memory file system holding a log of entries 1..n of term
// 1 in segments of salvageOpts' size.
func vfsWithLog(t *testing.T, n uint64) *vfs.MemFS {
	fs := vfs.NewMem()
	w := mustOpen(t, fs, memDir, salvageOpts)
	mustAppend(t, w, batch(1, n, 1))
	w.SetHardState(HardState{Term: 1, Commit: n})
	mustSync(t, w)
	w.Close()
	if len(segPaths(t, fs, memDir)) < 3 {
		t.Fatal("fewer than 3 segments")
	}
	return fs
}
