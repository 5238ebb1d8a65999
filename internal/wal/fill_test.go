package wal

import (
	"os"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// activeEnd is where the active segment's frames end (everything flushed).
func activeEnd(t *testing.T, w *WAL) int64 {
	t.Helper()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.active().size
}

// TestWALZeroFillTornOverwrite tears the records written over a zero-filled
// tail at many bytes (every one of the first frame, then every 7th; a
// power cut that kept a prefix of the overwrite):
// recovery yields the synced log plus a prefix of the new records, and the
// log goes on from there.
func TestWALZeroFillTornOverwrite(t *testing.T) {
	quiet := Options{Logf: func(string, ...any) {}}
	for keep := 0; ; {
		fs := vfs.NewMem()
		w := mustOpen(t, fs, memDir, quiet)
		mustAppend(t, w, batch(1, 20, 1))
		mustSync(t, w)
		from := activeEnd(t, w)
		seg := segPaths(t, fs, memDir)[0]
		mustAppend(t, w, batch(21, 30, 1))
		w.SetHardState(HardState{Term: 1, Commit: 30})
		w.Flush()
		to := activeEnd(t, w)
		if size := fileSize(t, fs, seg); size <= to {
			t.Fatalf("no zero-filled tail: file %d bytes, frames end at %d", size, to)
		}
		torn := readAt(t, fs, seg, from, to)
		fs.CrashKeep(nil) // the overwrite is lost...
		overlay(t, fs, seg, from, torn[:keep])
		w, err := Open(fs, memDir, quiet)
		if err != nil {
			t.Fatalf("keep %d: %v", keep, err)
		}
		last := w.LastIndex()
		if last < 20 || keep == len(torn) && last != 30 {
			t.Fatalf("keep %d of %d: log ends at %d", keep, len(torn), last)
		}
		checkLog(t, w, 1, last, term1)
		mustAppend(t, w, batch(last+1, 40, 2))
		w.Close()
		w = mustOpen(t, fs, memDir, quiet)
		checkLog(t, w, 1, 40, func(i uint64) uint64 { return 1 + min(i/(last+1), 1) })
		w.Close()
		if keep == len(torn) {
			return
		}
		if keep < 64 {
			keep++
		} else {
			keep = min(keep+7, len(torn))
		}
	}
}

func readAt(t *testing.T, fs vfs.FS, name string, from, to int64) []byte {
	t.Helper()
	data, err := vfs.ReadFile(fs, name)
	if err != nil || int64(len(data)) < to {
		t.Fatalf("read %s: %d bytes, %v", name, len(data), err)
	}
	return data[from:to]
}

// overlay writes b at off and fsyncs: the part of a lost overwrite that
// reached the disk all the same.
func overlay(t *testing.T, fs vfs.FS, name string, off int64, b []byte) {
	t.Helper()
	f, err := fs.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// TestWALZeroFillSealedExact: a sealed segment ends at its last frame (a
// zero tail there would read as damage in a sealed segment), a power cut
// leaves the active one's zero tail in place without a torn-tail notice,
// and Close leaves the files exact.
func TestWALZeroFillSealedExact(t *testing.T) {
	fs := vfs.NewMem()
	var notes []string
	opts := Options{SegmentSize: 16 << 10, Logf: func(f string, a ...any) { notes = append(notes, f) }}
	w := mustOpen(t, fs, memDir, opts)
	for i := uint64(0); i < 40; i++ {
		mustAppend(t, w, batch(1+i*50, 50+i*50, 1))
		mustSync(t, w)
	}
	end := activeEnd(t, w)
	paths := segPaths(t, fs, memDir)
	if len(paths) < 3 {
		t.Fatalf("%d segments, want rollovers", len(paths))
	}
	last := paths[len(paths)-1]
	filled := fileSize(t, fs, last)
	if filled <= end {
		t.Fatalf("active segment has no zero-filled tail (%d bytes, frames end at %d)", filled, end)
	}
	fs.CrashKeep(nil)
	w = mustOpen(t, fs, memDir, opts)
	checkLog(t, w, 1, 2000, term1)
	for _, n := range notes {
		if strings.Contains(n, "torn") {
			t.Fatalf("recovery reported a torn tail: %q", n)
		}
	}
	if got := fileSize(t, fs, last); got != filled {
		t.Fatalf("recovery changed the zero-filled segment from %d to %d bytes", filled, got)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := fileSize(t, fs, last); got != end {
		t.Fatalf("closed log's last segment has %d bytes, frames end at %d", got, end)
	}
}

// TestWALZeroFillSmallLogStaysSmall: the fill grows with the segment, so
// a log of a few records (an idle stream's group) reserves a block or two,
// not a MiB.
func TestWALZeroFillSmallLogStaysSmall(t *testing.T) {
	fs := vfs.NewMem()
	w := mustOpen(t, fs, memDir, Options{})
	mustAppend(t, w, batch(1, 20, 1))
	mustSync(t, w)
	end := activeEnd(t, w)
	size := fileSize(t, fs, segPaths(t, fs, memDir)[0])
	if size <= end || size > 2*fillMin {
		t.Fatalf("segment of %d bytes of frames is %d bytes long, want a fill of at most %d", end, size, 2*fillMin)
	}
	w.Close()
}

// TestWALZeroFillPastAMiB: fills of a segment past fillMax, whose block
// rounding makes them longer than fillMax (one panicked slicing its zeros),
// keep the log whole.
func TestWALZeroFillPastAMiB(t *testing.T) {
	fs := vfs.NewMem()
	w := mustOpen(t, fs, memDir, Options{})
	data := make([]byte, 100_003)
	for i := uint64(1); i <= 30; i++ {
		mustAppend(t, w, []Record{{Index: i, Term: 1, Data: data}})
		mustSync(t, w)
	}
	end := activeEnd(t, w)
	if size := fileSize(t, fs, segPaths(t, fs, memDir)[0]); size <= end || size%fillBlock != 0 {
		t.Fatalf("frames end at %d, file is %d bytes: want a block-aligned fill", end, size)
	}
	fs.CrashKeep(nil)
	w = mustOpen(t, fs, memDir, Options{})
	if w.LastIndex() != 30 {
		t.Fatalf("log ends at %d after a crash, want 30", w.LastIndex())
	}
	w.Close()
}
