package wal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

const memDir = "/data/wal"

// payload is the deterministic content of entry index written in term.
func payload(index, term uint64) []byte {
	return []byte(fmt.Sprintf("%d/%d/%s", index, term, strings.Repeat("x", int(index*7%200))))
}

// batch builds entries from..to (inclusive) of one term.
func batch(from, to, term uint64) []Record {
	var rs []Record
	for i := from; i <= to; i++ {
		rs = append(rs, Record{Index: i, Term: term, Type: uint8(i % 3), Data: payload(i, term)})
	}
	return rs
}

func mustOpen(t testing.TB, fs vfs.FS, dir string, opts Options) *WAL {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	w, err := Open(fs, dir, opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return w
}

func mustAppend(t testing.TB, w *WAL, rs []Record) {
	t.Helper()
	if err := w.Append(rs); err != nil {
		t.Fatalf("append %d..: %v", rs[0].Index, err)
	}
}

func mustSync(t testing.TB, w *WAL) {
	t.Helper()
	if err := w.Sync(); err != nil {
		t.Fatalf("sync: %v", err)
	}
}

// checkLog asserts the log holds exactly first..last, entry i having term
// termOf(i) and its canonical payload, reading it back in pieces of every
// size limit.
func checkLog(t testing.TB, w *WAL, first, last uint64, termOf func(uint64) uint64) {
	t.Helper()
	if f, l := w.FirstIndex(), w.LastIndex(); f != first || l != last {
		t.Fatalf("log is %d..%d, want %d..%d", f, l, first, last)
	}
	for _, limit := range []uint64{0, 500, 1 << 40} {
		for i := first; i <= last; {
			got, err := w.Entries(i, last+1, limit)
			if err != nil || len(got) == 0 {
				t.Fatalf("entries(%d, %d, %d): %d, %v", i, last+1, limit, len(got), err)
			}
			for _, r := range got {
				term := termOf(r.Index)
				if r.Index != i || r.Term != term || r.Type != uint8(i%3) || !bytes.Equal(r.Data, payload(i, term)) {
					t.Fatalf("entry %d: got %d/%d/%d %q", i, r.Index, r.Term, r.Type, r.Data)
				}
				i++
			}
		}
	}
	for i := first; i <= last; i++ {
		if term, err := w.Term(i); err != nil || term != termOf(i) {
			t.Fatalf("term(%d) = %d, %v; want %d", i, term, err, termOf(i))
		}
	}
}

func term1(uint64) uint64 { return 1 }

func countSegments(t testing.TB, fs vfs.FS, dir string) int {
	t.Helper()
	des, err := fs.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, de := range des {
		if strings.HasSuffix(de.Name(), ".wal") {
			n++
		}
	}
	return n
}

func TestWALAppendReadAcrossSegments(t *testing.T) {
	fs := vfs.NewMem()
	w := mustOpen(t, fs, memDir, Options{SegmentSize: 2048})
	if w.FirstIndex() != 1 || w.LastIndex() != 0 {
		t.Fatalf("empty log is %d..%d", w.FirstIndex(), w.LastIndex())
	}
	for i := uint64(1); i <= 400; i += 10 {
		mustAppend(t, w, batch(i, i+9, 1))
		if i%50 == 1 {
			mustSync(t, w)
		}
	}
	mustSync(t, w)
	if n := countSegments(t, fs, memDir); n < 10 {
		t.Fatalf("only %d segments", n)
	}
	checkLog(t, w, 1, 400, term1)
	got, _ := w.Entries(10, 20, 1)
	if len(got) != 1 {
		t.Fatalf("maxBytes 1 gave %d entries", len(got))
	}
	if _, err := w.Entries(1, 402, 0); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("entries past the end: %v", err)
	}
	if _, err := w.Term(401); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("term past the end: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w = mustOpen(t, fs, memDir, Options{SegmentSize: 2048})
	checkLog(t, w, 1, 400, term1) // from disk now: the cache starts empty
	mustAppend(t, w, batch(401, 450, 1))
	checkLog(t, w, 1, 450, term1)
	w.Close()
}

func TestWALAppendRules(t *testing.T) {
	w := mustOpen(t, vfs.NewMem(), memDir, Options{})
	defer w.Close()
	mustAppend(t, w, batch(1, 5, 2))
	for name, rs := range map[string][]Record{
		"gap":      batch(7, 8, 2),
		"overlap":  batch(5, 6, 2),
		"term":     batch(6, 6, 1),
		"reserved": {{Index: 6, Term: 2, Type: metaType}},
		"inner":    {{Index: 6, Term: 2}, {Index: 8, Term: 2}},
	} {
		if err := w.Append(rs); err == nil {
			t.Errorf("%s: append accepted", name)
		}
	}
	checkLog(t, w, 1, 5, func(uint64) uint64 { return 2 })
}

func TestWALHardStatePersists(t *testing.T) {
	fs := vfs.NewMem()
	w := mustOpen(t, fs, memDir, Options{})
	mustAppend(t, w, batch(1, 3, 1))
	hs := HardState{Term: 3, Vote: 2, Commit: 3}
	if err := w.SetHardState(hs); err != nil {
		t.Fatal(err)
	}
	mustSync(t, w)
	if err := w.SetHardState(HardState{Term: 4, Vote: 1, Commit: 3}); err != nil {
		t.Fatal(err)
	}
	fs.Crash() // the second one was never synced
	w = mustOpen(t, fs, memDir, Options{})
	if got := w.HardState(); got != hs {
		t.Fatalf("hard state %+v, want %+v", got, hs)
	}
	for _, bad := range []HardState{{Term: 2}, {Term: 3, Vote: 5, Commit: 3}} {
		if err := w.SetHardState(bad); err == nil {
			t.Errorf("SetHardState(%+v) accepted", bad)
		}
	}
	w.SetHardState(HardState{Term: 3, Vote: 2, Commit: 9})
	if err := w.Sync(); err == nil {
		t.Fatal("sync with commit beyond the last entry accepted")
	}
	w.SetHardState(HardState{Term: 5, Vote: 0, Commit: 2})
	mustSync(t, w)
	w.Close()
	w = mustOpen(t, fs, memDir, Options{})
	if got := w.HardState(); got != (HardState{Term: 5, Commit: 2}) {
		t.Fatalf("hard state %+v", got)
	}
	checkLog(t, w, 1, 3, term1)
	w.Close()
}

func TestWALTruncateThenNewTerm(t *testing.T) {
	fs := vfs.NewMem()
	w := mustOpen(t, fs, memDir, Options{SegmentSize: 1024})
	mustAppend(t, w, batch(1, 60, 1))
	w.SetHardState(HardState{Term: 1, Commit: 10})
	mustSync(t, w)
	if err := w.TruncateFrom(10); err == nil {
		t.Fatal("truncation of a committed entry accepted")
	}
	if err := w.TruncateFrom(21); err != nil { // in an older segment
		t.Fatal(err)
	}
	if err := w.TruncateFrom(100); err != nil { // beyond the end: nothing
		t.Fatal(err)
	}
	mustAppend(t, w, batch(21, 80, 2))
	mustSync(t, w)
	want := func(i uint64) uint64 {
		if i <= 20 {
			return 1
		}
		return 2
	}
	checkLog(t, w, 1, 80, want)
	fs.Crash()
	w = mustOpen(t, fs, memDir, Options{SegmentSize: 1024})
	checkLog(t, w, 1, 80, want)
	// Again, inside the cache and the unsynced buffer.
	if err := w.TruncateFrom(75); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, w, batch(75, 90, 3))
	if err := w.TruncateFrom(85); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, w, batch(85, 86, 4))
	mustSync(t, w)
	want2 := func(i uint64) uint64 {
		switch {
		case i >= 85:
			return 4
		case i >= 75:
			return 3
		}
		return want(i)
	}
	checkLog(t, w, 1, 86, want2)
	w.Close()
	w = mustOpen(t, fs, memDir, Options{SegmentSize: 1024})
	checkLog(t, w, 1, 86, want2)
	w.Close()
}

func TestWALCompactAndSnapshotMeta(t *testing.T) {
	fs := vfs.NewMem()
	opts := Options{SegmentSize: 1024}
	w := mustOpen(t, fs, memDir, opts)
	mustAppend(t, w, batch(1, 100, 1))
	mustAppend(t, w, batch(101, 300, 2))
	mustSync(t, w)
	before := countSegments(t, fs, memDir)
	if err := w.SaveSnapshotMeta(200, 2); err != nil {
		t.Fatal(err)
	}
	if err := w.Compact(200); err != nil {
		t.Fatal(err)
	}
	after := countSegments(t, fs, memDir)
	if after >= before {
		t.Fatalf("compaction kept %d of %d segments", after, before)
	}
	termOf := func(i uint64) uint64 { return 1 + min(i-1, 100)/100 }
	check := func(w *WAL) {
		t.Helper()
		checkLog(t, w, 201, 300, termOf)
		if term, err := w.Term(200); err != nil || term != 2 {
			t.Fatalf("term at the compaction point: %d, %v", term, err)
		}
		if _, err := w.Term(199); !errors.Is(err, ErrCompacted) {
			t.Fatalf("term below the compaction point: %v", err)
		}
		if _, err := w.Entries(200, 210, 0); !errors.Is(err, ErrCompacted) {
			t.Fatalf("entries below the compaction point: %v", err)
		}
		if i, tm := w.SnapshotMeta(); i != 200 || tm != 2 {
			t.Fatalf("snapshot meta %d/%d", i, tm)
		}
	}
	check(w)
	fs.Crash()
	w = mustOpen(t, fs, memDir, opts)
	check(w)
	if err := w.Compact(400); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("compact past the end: %v", err)
	}
	if err := w.Compact(300); err != nil { // everything: FirstIndex > LastIndex
		t.Fatal(err)
	}
	w.Close()
	w = mustOpen(t, fs, memDir, opts)
	if w.FirstIndex() != 301 || w.LastIndex() != 300 {
		t.Fatalf("fully compacted log is %d..%d", w.FirstIndex(), w.LastIndex())
	}
	if term, err := w.Term(300); err != nil || term != 2 {
		t.Fatalf("term(300) = %d, %v", term, err)
	}
	mustAppend(t, w, batch(301, 310, 3))
	w.Close()
	w = mustOpen(t, fs, memDir, opts)
	checkLog(t, w, 301, 310, func(uint64) uint64 { return 3 })
	w.Close()
}

func TestWALSnapshotInstallResetsLog(t *testing.T) {
	fs := vfs.NewMem()
	w := mustOpen(t, fs, memDir, Options{SegmentSize: 1024})
	mustAppend(t, w, batch(1, 50, 1))
	mustSync(t, w)
	// A leader's snapshot far ahead: the log restarts after it.
	if err := w.SaveSnapshotMeta(1000, 4); err != nil {
		t.Fatal(err)
	}
	if w.FirstIndex() != 1001 || w.LastIndex() != 1000 {
		t.Fatalf("after install: %d..%d", w.FirstIndex(), w.LastIndex())
	}
	mustAppend(t, w, batch(1001, 1020, 4))
	w.Compact(1000) // drops the old segments
	mustSync(t, w)
	fs.Crash()
	w = mustOpen(t, fs, memDir, Options{SegmentSize: 1024})
	checkLog(t, w, 1001, 1020, func(uint64) uint64 { return 4 })
	if term, _ := w.Term(1000); term != 4 {
		t.Fatalf("term(1000) = %d", term)
	}
	// A snapshot matching the log keeps the entries after it.
	if err := w.SaveSnapshotMeta(1010, 4); err != nil {
		t.Fatal(err)
	}
	checkLog(t, w, 1001, 1020, func(uint64) uint64 { return 4 })
	if err := w.SaveSnapshotMeta(1005, 4); err == nil {
		t.Fatal("older snapshot accepted")
	}
	// A conflicting one (same index, other term) discards the log.
	if err := w.SaveSnapshotMeta(1015, 5); err != nil {
		t.Fatal(err)
	}
	if w.FirstIndex() != 1016 || w.LastIndex() != 1015 {
		t.Fatalf("after conflicting install: %d..%d", w.FirstIndex(), w.LastIndex())
	}
	w.Close()
	w = mustOpen(t, fs, memDir, Options{SegmentSize: 1024})
	if w.FirstIndex() != 1016 || w.LastIndex() != 1015 {
		t.Fatalf("reopened: %d..%d", w.FirstIndex(), w.LastIndex())
	}
	w.Close()
}

func TestWALClosed(t *testing.T) {
	w := mustOpen(t, vfs.NewMem(), memDir, Options{})
	mustAppend(t, w, batch(1, 1, 1))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(batch(2, 2, 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
	if _, err := w.Entries(1, 2, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("entries after close: %v", err)
	}
	if err := w.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second close: %v", err)
	}
}

// TestWALRealDisk runs on the operating system's file system: write, reopen,
// and a tail cut short by hand.
func TestWALRealDisk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	opts := Options{SegmentSize: 4096}
	w := mustOpen(t, vfs.Default, dir, opts)
	mustAppend(t, w, batch(1, 200, 1))
	w.SetHardState(HardState{Term: 1, Vote: 1, Commit: 150})
	mustSync(t, w)
	mustAppend(t, w, batch(201, 210, 1))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w = mustOpen(t, vfs.Default, dir, opts)
	checkLog(t, w, 1, 210, term1)
	w.Close()

	des, _ := os.ReadDir(dir)
	last := filepath.Join(dir, des[len(des)-1].Name())
	fi, _ := os.Stat(last)
	if err := os.Truncate(last, fi.Size()-5); err != nil { // tear the last record
		t.Fatal(err)
	}
	w = mustOpen(t, vfs.Default, dir, opts)
	checkLog(t, w, 1, 209, term1)
	if w.HardState().Commit != 150 {
		t.Fatalf("hard state %+v", w.HardState())
	}
	mustAppend(t, w, batch(210, 220, 2))
	w.Close()
	w = mustOpen(t, vfs.Default, dir, opts)
	checkLog(t, w, 1, 220, func(i uint64) uint64 { return 1 + i/210 })
	w.Close()
}

// TestWALCacheAndDiskReads reads ranges that straddle the in-memory cache
// and the files, around truncations, compaction and oversized records.
func TestWALCacheAndDiskReads(t *testing.T) {
	fs := vfs.NewMem()
	opts := Options{SegmentSize: 256 << 10}
	w := mustOpen(t, fs, memDir, opts)
	for i := uint64(1); i <= 10000; i += 500 {
		mustAppend(t, w, batch(i, i+499, 1))
	}
	if w.cache.n == 0 || w.cache.lo <= 1 {
		t.Fatalf("cache holds %d from %d: nothing was evicted", w.cache.n, w.cache.lo)
	}
	checkLog(t, w, 1, 10000, term1) // partly before any Sync: reads flush
	if err := w.TruncateFrom(9000); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, w, batch(9000, 9100, 2))
	if err := w.TruncateFrom(3000); err != nil { // below the cache
		t.Fatal(err)
	}
	mustAppend(t, w, batch(3000, 3005, 3))
	termOf := func(i uint64) uint64 { return 1 + 2*(i/3000) }
	checkLog(t, w, 1, 3005, termOf)
	if err := w.Compact(3002); err != nil {
		t.Fatal(err)
	}
	checkLog(t, w, 3003, 3005, termOf)
	big := Record{Index: 3006, Term: 3, Data: bytes.Repeat([]byte("b"), cacheBytes+10)}
	mustAppend(t, w, []Record{big})
	mustAppend(t, w, batch(3007, 3010, 3))
	got, err := w.Entries(3005, 3011, 1<<40)
	if err != nil || len(got) != 6 || !bytes.Equal(got[1].Data, big.Data) {
		t.Fatalf("entries around a big record: %d, %v", len(got), err)
	}
	w.Close()
	w = mustOpen(t, fs, memDir, opts)
	got, err = w.Entries(3006, 3007, 0)
	if err != nil || len(got) != 1 || !bytes.Equal(got[0].Data, big.Data) {
		t.Fatalf("big record after reopen: %d, %v", len(got), err)
	}
	w.Close()
}

// TestWALConcurrentReaders reads while another goroutine appends, syncs,
// truncates and compacts (run with -race).
func TestWALConcurrentReaders(t *testing.T) {
	w := mustOpen(t, vfs.NewMem(), memDir, Options{SegmentSize: 8192})
	defer w.Close()
	done := make(chan struct{})
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				first, last := w.FirstIndex(), w.LastIndex()
				if last < first {
					continue
				}
				_, err := w.Entries(first, last+1, 4096)
				if err != nil && !errors.Is(err, ErrCompacted) && !errors.Is(err, ErrUnavailable) {
					errs <- err
					return
				}
				w.Term(last)
				w.HardState()
			}
		}()
	}
	for i := uint64(1); i <= 3000; i += 10 {
		mustAppend(t, w, batch(i, i+9, 1))
		w.SetHardState(HardState{Term: 1, Commit: i})
		mustSync(t, w)
		if i%500 == 1 {
			if err := w.Compact(i); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(done)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func TestLocIndexChunks(t *testing.T) {
	var x locIndex
	var model []int64
	check := func() {
		t.Helper()
		if x.len() != len(model) {
			t.Fatalf("len %d, want %d", x.len(), len(model))
		}
		for k, off := range model {
			if x.at(k).off != off {
				t.Fatalf("at(%d) = %d, want %d", k, x.at(k).off, off)
			}
		}
	}
	next := int64(0)
	push := func(n int) {
		for range n {
			x.push(entLoc{off: next})
			model = append(model, next)
			next++
		}
	}
	push(3*locChunk + 5)
	check()
	x.dropFront(locChunk + 7)
	model = model[locChunk+7:]
	check()
	x.truncate(locChunk - 3)
	model = model[:locChunk-3]
	check()
	push(2*locChunk + 1)
	check()
	x.truncate(2 * locChunk)
	model = model[:2*locChunk]
	check()
	push(1)
	x.dropFront(5)
	model = model[5:]
	check()
	x.dropFront(len(model))
	model = nil
	check()
	push(10)
	check()
	x.truncate(0)
	model = nil
	check()
}
