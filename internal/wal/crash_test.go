package wal

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

var errInjected = errors.New("injected")

// segPaths lists the segment files of dir in order.
func segPaths(t testing.TB, fs vfs.FS, dir string) []string {
	t.Helper()
	des, err := fs.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		if strings.HasSuffix(de.Name(), ".wal") {
			out = append(out, filepath.Join(dir, de.Name()))
		}
	}
	return out
}

func fileSize(t testing.TB, fs vfs.FS, name string) int64 {
	t.Helper()
	fi, err := fs.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// writeUnsynced appends through Sync with fsync failing: the bytes reach the
// file but not the disk, so a crash may keep any prefix of them.
func writeUnsynced(t *testing.T, fs *vfs.MemFS, w *WAL) {
	t.Helper()
	fs.InjectError(func(op, name string) error {
		if op == "sync" {
			return errInjected
		}
		return nil
	})
	if err := w.Sync(); !errors.Is(err, errInjected) {
		t.Fatalf("sync with failing fsync: %v", err)
	}
	fs.InjectError(nil)
}

func TestWALSyncedSurvivesCrash(t *testing.T) {
	fs := vfs.NewMem()
	opts := Options{SegmentSize: 4096}
	w := mustOpen(t, fs, memDir, opts)
	var synced uint64
	for i := uint64(1); i <= 500; i += 25 {
		mustAppend(t, w, batch(i, i+24, 1))
		if i%100 == 1 {
			mustSync(t, w)
			synced = i + 24
		}
	}
	fs.Crash()
	w = mustOpen(t, fs, memDir, opts)
	last := w.LastIndex()
	if last < synced || last > 500 {
		t.Fatalf("after crash the log ends at %d, synced up to %d", last, synced)
	}
	checkLog(t, w, 1, last, term1)
	w.Close()
}

func TestWALTornTailEveryOffset(t *testing.T) {
	// The unsynced part: 21..30 and a hard state record.
	probe := vfs.NewMem()
	w := mustOpen(t, probe, memDir, Options{NoFill: true})
	mustAppend(t, w, batch(1, 20, 1))
	mustSync(t, w)
	seg := segPaths(t, probe, memDir)[0]
	syncedLen := fileSize(t, probe, seg)
	mustAppend(t, w, batch(21, 30, 1))
	w.SetHardState(HardState{Term: 1, Commit: 30})
	mustSync(t, w)
	tornLen := int(fileSize(t, probe, seg) - syncedLen)

	for keep := 0; keep <= tornLen; keep++ {
		fs := vfs.NewMem()
		w := mustOpen(t, fs, memDir, Options{NoFill: true, Logf: func(string, ...any) {}})
		mustAppend(t, w, batch(1, 20, 1))
		mustSync(t, w)
		mustAppend(t, w, batch(21, 30, 1))
		w.SetHardState(HardState{Term: 1, Commit: 30})
		writeUnsynced(t, fs, w)
		fs.CrashKeep(func(string, int) int { return keep })
		w, err := Open(fs, memDir, Options{Logf: func(string, ...any) {}})
		if err != nil {
			t.Fatalf("keep %d: %v", keep, err)
		}
		last := w.LastIndex()
		if last < 20 || keep == tornLen && last != 30 {
			t.Fatalf("keep %d: log ends at %d", keep, last)
		}
		if c := w.HardState().Commit; c != 0 && (c != 30 || keep != tornLen) {
			t.Fatalf("keep %d: commit %d", keep, c)
		}
		checkLog(t, w, 1, last, term1)
		mustAppend(t, w, batch(last+1, 40, 2)) // the log goes on from there
		w.Close()
		w = mustOpen(t, fs, memDir, Options{Logf: func(string, ...any) {}})
		checkLog(t, w, 1, 40, func(i uint64) uint64 { return 1 + min(i/(last+1), 1) })
		w.Close()
	}
}

// TestWALTornTruncation crashes at every byte of a truncation and the new
// tail written after it: recovery yields the old tail or a prefix of the new
// one, never a mix.
func TestWALTornTruncation(t *testing.T) {
	var olds, news int
	for keep := 0; ; keep++ {
		fs := vfs.NewMem()
		opts := Options{SegmentSize: 1 << 20, NoFill: true, Logf: func(string, ...any) {}}
		w := mustOpen(t, fs, memDir, opts)
		mustAppend(t, w, batch(1, 20, 1))
		mustSync(t, w)
		seg := segPaths(t, fs, memDir)[0]
		syncedLen := fileSize(t, fs, seg)
		if err := w.TruncateFrom(15); err != nil {
			t.Fatal(err)
		}
		mustAppend(t, w, batch(15, 25, 2))
		writeUnsynced(t, fs, w)
		tornLen := int(fileSize(t, fs, seg) - syncedLen)
		fs.CrashKeep(func(string, int) int { return keep })
		w = mustOpen(t, fs, memDir, opts)
		last := w.LastIndex()
		t15, _ := w.Term(15)
		switch {
		case last == 20 && t15 == 1: // the old tail
			checkLog(t, w, 1, 20, term1)
			olds++
		case last >= 14 && (last == 14 || t15 == 2): // a prefix of the new one
			checkLog(t, w, 1, last, func(i uint64) uint64 { return 1 + i/15 })
			news++
		default:
			t.Fatalf("keep %d: log ends at %d, term(15) = %d", keep, last, t15)
		}
		w.Close()
		if keep >= tornLen {
			if last != 25 || olds == 0 || news == 0 {
				t.Fatalf("everything kept but the log ends at %d (%d old, %d new)", last, olds, news)
			}
			t.Logf("%d crashes: %d kept the old tail, %d a prefix of the new one", keep+1, olds, news)
			return
		}
	}
}

func TestWALBitFlipInTailRecordTruncates(t *testing.T) {
	for _, back := range []int64{1, 10, 29, 40} { // data, header, checksum, length
		fs := vfs.NewMem()
		w := mustOpen(t, fs, memDir, Options{})
		mustAppend(t, w, batch(1, 30, 1))
		mustSync(t, w)
		w.Close()
		seg := segPaths(t, fs, memDir)[0]
		r30 := frameLen(len(payload(30, 1)))
		fs.FlipBit(seg, fileSize(t, fs, seg)-r30+(r30-back)%r30, 3)
		w = mustOpen(t, fs, memDir, Options{})
		checkLog(t, w, 1, 29, term1)
		w.Close()
	}
}

func TestWALBitFlipInOlderSegmentIsCorrupt(t *testing.T) {
	fs := vfs.NewMem()
	opts := Options{SegmentSize: 2048}
	w := mustOpen(t, fs, memDir, opts)
	mustAppend(t, w, batch(1, 200, 1))
	mustSync(t, w)
	w.Close()
	segs := segPaths(t, fs, memDir)
	if len(segs) < 3 {
		t.Fatalf("%d segments", len(segs))
	}
	fs.FlipBit(segs[1], fileSize(t, fs, segs[1])/2, 0)
	if _, err := Open(fs, memDir, opts); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open: %v", err)
	}
	fs.FlipBit(segs[1], fileSize(t, fs, segs[1])/2, 0) // repaired
	w = mustOpen(t, fs, memDir, opts)
	checkLog(t, w, 1, 200, term1)
	w.Close()
}

func TestWALBitFlipInMiddleOfLastSegmentIsCorrupt(t *testing.T) {
	fs := vfs.NewMem()
	w := mustOpen(t, fs, memDir, Options{})
	mustAppend(t, w, batch(1, 50, 1))
	mustSync(t, w)
	w.Close()
	seg := segPaths(t, fs, memDir)[0]
	fs.FlipBit(seg, fileSize(t, fs, seg)/2, 5)
	if _, err := Open(fs, memDir, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open: %v", err)
	}
}

func TestWALMissingSegmentIsCorrupt(t *testing.T) {
	fs := vfs.NewMem()
	opts := Options{SegmentSize: 2048}
	w := mustOpen(t, fs, memDir, opts)
	mustAppend(t, w, batch(1, 200, 1))
	w.SetHardState(HardState{Term: 1, Commit: 200})
	mustSync(t, w)
	w.Close()
	segs := segPaths(t, fs, memDir)
	// Losing the whole last segment looks like a crash before it was
	// created, so only the others can be told apart.
	lastSeg := segs[len(segs)-1]
	for k := range segs[:len(segs)-1] {
		c := copyDir(t, fs, memDir)
		c.Remove(segs[k])
		c.FlipBit(lastSeg, fileSize(t, c, lastSeg)-1, 0) // and a torn tail
		size := fileSize(t, c, lastSeg)
		if _, err := Open(c, memDir, opts); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("without %s: open gave %v", filepath.Base(segs[k]), err)
		}
		if fileSize(t, c, lastSeg) != size {
			t.Fatal("a failed open cut the torn tail")
		}
	}
}

// copyDir copies every file of dir into a new MemFS, durably.
func copyDir(t testing.TB, from vfs.FS, dir string) *vfs.MemFS {
	t.Helper()
	to := vfs.NewMem()
	to.MkdirAll(dir, 0o750)
	des, err := from.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		name := filepath.Join(dir, de.Name())
		data, err := vfs.ReadFile(from, name)
		if err != nil {
			t.Fatal(err)
		}
		if err := vfs.WriteFileAtomic(to, name, data); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

func TestWALReadBackDetectsDamage(t *testing.T) {
	fs := vfs.NewMem()
	w := mustOpen(t, fs, memDir, Options{})
	mustAppend(t, w, batch(1, 20, 1))
	mustSync(t, w)
	w.Close()
	w = mustOpen(t, fs, memDir, Options{}) // cache empty: reads hit the file
	seg := segPaths(t, fs, memDir)[0]
	fs.FlipBit(seg, fileSize(t, fs, seg)/3, 1)
	if _, err := w.Entries(1, 21, 1<<30); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("entries over a flipped bit: %v", err)
	}
	w.Close()
}

// TestWALInjectedErrorsKeepSyncedData fails the nth file operation of a
// workload, for every n: the failing call returns the error, later writes
// refuse, and after a crash every entry acknowledged by a Sync is intact.
func TestWALInjectedErrorsKeepSyncedData(t *testing.T) {
	for n := 1; ; n++ {
		fs := vfs.NewMem()
		opts := Options{SegmentSize: 1500, Logf: func(string, ...any) {}}
		w := mustOpen(t, fs, memDir, opts)
		count := 0
		fs.InjectError(func(op, name string) error {
			if op != "write" && op != "sync" && op != "syncdir" && op != "open" && op != "remove" {
				return nil
			}
			if count++; count == n {
				return fmt.Errorf("%w %s %s", errInjected, op, name)
			}
			return nil
		})
		acked, inCompact, failed := injectedWorkload(w)
		fs.InjectError(nil)
		if failed == nil {
			if count < n {
				t.Logf("failed each of %d operations in turn", n-1)
				return // the workload ran out of operations to fail
			}
			t.Fatalf("n=%d: injected error was not reported", n)
		}
		if !errors.Is(failed, errInjected) {
			t.Fatalf("n=%d: workload failed with %v", n, failed)
		}
		if !inCompact { // removing old segments may fail without harm
			if err := w.Append(batch(w.LastIndex()+1, w.LastIndex()+1, 9)); err == nil {
				t.Fatalf("n=%d: append accepted after %v", n, failed)
			}
		}
		fs.Crash()
		w = mustOpen(t, fs, memDir, opts)
		if last := w.LastIndex(); last < acked {
			t.Fatalf("n=%d (%v): log ends at %d, %d were acknowledged", n, failed, last, acked)
		}
		checkLog(t, w, w.FirstIndex(), w.LastIndex(), func(i uint64) uint64 { return 1 + (i-1)/100 })
		w.Close()
	}
}

// injectedWorkload appends, syncs and compacts until an error; it returns
// the last index a successful Sync acknowledged.
func injectedWorkload(w *WAL) (acked uint64, inCompact bool, err error) {
	for b := uint64(0); b < 30; b++ {
		from := b*10 + 1
		if err = w.Append(batch(from, from+9, 1+b/10)); err != nil {
			return acked, false, err
		}
		if err = w.SetHardState(HardState{Term: 1 + b/10, Commit: from}); err != nil {
			return acked, false, err
		}
		if err = w.Sync(); err != nil {
			return acked, false, err
		}
		acked = from + 9
		if b == 20 {
			if err = w.Compact(100); err != nil {
				return acked, true, err
			}
		}
	}
	return acked, false, nil
}

// TestWALFlushSurvivesProcessKill: Flush hands entries and the hard state to
// the OS without fsync. A killed process (the files as written, nothing
// closed) keeps all of it; a machine crash keeps at least what was synced.
func TestWALFlushSurvivesProcessKill(t *testing.T) {
	fs := vfs.NewMem()
	w := mustOpen(t, fs, memDir, Options{})
	mustAppend(t, w, batch(1, 50, 1))
	mustSync(t, w)
	if w.Dirty() {
		t.Fatal("dirty right after Sync")
	}
	mustAppend(t, w, batch(51, 80, 1))
	if err := w.SetHardState(HardState{Term: 1, Vote: 7, Commit: 80}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if !w.Dirty() {
		t.Fatal("flushed but not fsynced data must stay dirty")
	}
	killed := mustOpen(t, fs, memDir, Options{}) // w is abandoned, as after kill -9
	if last, hs := killed.LastIndex(), killed.HardState(); last != 80 || hs.Commit != 80 || hs.Vote != 7 {
		t.Fatalf("after a process kill: last %d, hard state %+v", last, hs)
	}
	checkLog(t, killed, 1, 80, term1)
	fs.Crash()
	crashed := mustOpen(t, fs, memDir, Options{Logf: func(string, ...any) {}})
	if last := crashed.LastIndex(); last < 50 || last > 80 {
		t.Fatalf("after a machine crash the log ends at %d", last)
	}
	checkLog(t, crashed, 1, crashed.LastIndex(), term1)
	crashed.Close()
}

// TestWALEntriesDurable: after a Sync only a commit index set since leaves
// the entries, term and vote durable (Dirty stays true for it); an entry,
// a term or a vote not yet synced does not.
func TestWALEntriesDurable(t *testing.T) {
	w := mustOpen(t, vfs.NewMem(), memDir, Options{})
	defer w.Close()
	mustAppend(t, w, batch(1, 10, 1))
	if w.EntriesDurable() {
		t.Fatal("entries not synced reported durable")
	}
	if err := w.SetHardState(HardState{Term: 1, Vote: 3, Commit: 5}); err != nil {
		t.Fatal(err)
	}
	mustSync(t, w)
	if !w.EntriesDurable() {
		t.Fatal("synced entries not durable")
	}
	if err := w.SetHardState(HardState{Term: 1, Vote: 3, Commit: 10}); err != nil {
		t.Fatal(err)
	}
	if !w.Dirty() || !w.EntriesDurable() {
		t.Fatalf("a commit index set since the sync: dirty %v, entries durable %v", w.Dirty(), w.EntriesDurable())
	}
	if err := w.SetHardState(HardState{Term: 2, Commit: 10}); err != nil {
		t.Fatal(err)
	}
	if w.EntriesDurable() {
		t.Fatal("a term set since the sync reported durable")
	}
	mustSync(t, w)
	mustAppend(t, w, batch(11, 11, 2))
	if w.EntriesDurable() {
		t.Fatal("an entry appended since the sync reported durable")
	}
}
