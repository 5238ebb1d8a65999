package wal

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

const fuzzSeg = "00000000000000000001-00000000000000000001.wal"

// seedSegments builds real segment files: plain entries, a hard state, a
// truncation, a compaction and a snapshot install.
func seedSegments(f *testing.F) [][]byte {
	fs := vfs.NewMem()
	w, err := Open(fs, memDir, Options{})
	if err != nil {
		f.Fatal(err)
	}
	read := func() []byte {
		if err := w.Sync(); err != nil {
			f.Fatal(err)
		}
		data, err := vfs.ReadFile(fs, filepath.Join(memDir, fuzzSeg))
		if err != nil {
			f.Fatal(err)
		}
		return data
	}
	var out [][]byte
	w.Append(batch(1, 3, 1))
	out = append(out, read())
	w.SetHardState(HardState{Term: 2, Vote: 1, Commit: 2})
	out = append(out, read())
	w.TruncateFrom(3)
	w.Append(batch(3, 4, 2))
	out = append(out, read())
	w.Compact(2)
	out = append(out, read())
	w.SaveSnapshotMeta(9, 3)
	w.Append(batch(10, 10, 3))
	out = append(out, read())
	w.Close()
	return out
}

// FuzzWALRecovery writes arbitrary bytes as a segment file: Open never
// panics, fails only with ErrCorrupt, and every record it hands out is one
// that appears, with a valid checksum, in the file.
func FuzzWALRecovery(f *testing.F) {
	for _, seg := range seedSegments(f) {
		f.Add(seg)
		f.Add(seg[:len(seg)-7])
		flipped := bytes.Clone(seg)
		flipped[len(seg)/2] ^= 0x10
		f.Add(flipped)
	}
	f.Add([]byte{})
	f.Add(make([]byte, 100))
	f.Fuzz(func(t *testing.T, data []byte) {
		fs := vfs.NewMem()
		name := filepath.Join(memDir, fuzzSeg)
		fs.MkdirAll(memDir, 0o750)
		if err := vfs.WriteFileAtomic(fs, name, data); err != nil {
			t.Fatal(err)
		}
		quiet := Options{Logf: func(string, ...any) {}}
		w, err := Open(fs, memDir, quiet)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("open failed with %v", err)
			}
			return
		}
		recs := checkFuzzedLog(t, w, data)
		// The recovered log is usable and survives a reopen unchanged.
		next := w.LastIndex() + 1
		term, _ := w.Term(next - 1)
		if err := w.Append([]Record{{Index: next, Term: term, Data: []byte("more")}}); err != nil {
			t.Fatalf("append after recovery: %v", err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if fi, _ := fs.Stat(name); fi.Size() > int64(len(data))+1<<10 {
			t.Fatalf("segment grew from %d to %d", len(data), fi.Size())
		}
		w, err = Open(fs, memDir, quiet)
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		again, err := w.Entries(w.FirstIndex(), w.LastIndex()+1, 1<<40)
		if err != nil || len(again) != len(recs)+1 {
			t.Fatalf("reopen: %d entries (%v), had %d + 1", len(again), err, len(recs))
		}
		w.Close()
	})
}

// checkFuzzedLog checks the invariants of a log recovered from data and
// returns its entries.
func checkFuzzedLog(t *testing.T, w *WAL, data []byte) []Record {
	first, last := w.FirstIndex(), w.LastIndex()
	if first > last+1 || w.HardState().Commit > last {
		t.Fatalf("log %d..%d, hard state %+v", first, last, w.HardState())
	}
	if last < first {
		return nil
	}
	recs, err := w.Entries(first, last+1, 1<<40)
	if err != nil || uint64(len(recs)) != last-first+1 {
		t.Fatalf("entries %d..%d: %d, %v", first, last, len(recs), err)
	}
	for _, r := range recs {
		enc := appendFrame(nil, r.Index, r.Term, r.Type, r.Data)
		if !bytes.Contains(data, enc) {
			t.Fatalf("entry %d is not a valid frame of the input", r.Index)
		}
	}
	return recs
}
