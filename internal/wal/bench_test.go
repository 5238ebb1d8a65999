package wal

import (
	"path/filepath"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// benchAppendSync appends 100 records of 128 bytes and syncs once per
// iteration (one group commit).
func benchAppendSync(b *testing.B, fs vfs.FS, dir string, segSize int64) {
	w := mustOpen(b, fs, dir, Options{SegmentSize: segSize, Logf: func(string, ...any) {}})
	defer w.Close()
	const perSync = 100
	data := make([]byte, 128)
	recs := make([]Record, perSync)
	next := uint64(1)
	b.SetBytes(perSync * 128)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for i := range recs {
			recs[i] = Record{Index: next, Term: 1, Data: data}
			next++
		}
		if err := w.Append(recs); err != nil {
			b.Fatal(err)
		}
		if err := w.SetHardState(HardState{Term: 1, Commit: next - 1}); err != nil {
			b.Fatal(err)
		}
		if err := w.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	secs := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N*perSync)/secs, "records/s")
	b.ReportMetric(float64(b.N)/secs, "fsyncs/s")
}

// BenchmarkAppendSync runs on the real disk.
func BenchmarkAppendSync(b *testing.B) {
	benchAppendSync(b, vfs.Default, filepath.Join(b.TempDir(), "wal"), 0)
}

// BenchmarkAppendSyncMem measures the WAL's own CPU cost (no real fsync).
// MemFS copies a whole file on every Sync, so segments are kept small.
func BenchmarkAppendSyncMem(b *testing.B) {
	benchAppendSync(b, vfs.NewMem(), memDir, 1<<20)
}

// BenchmarkEntriesFromDisk reads back 100 entries that are no longer cached.
func BenchmarkEntriesFromDisk(b *testing.B) {
	fs := vfs.NewMem()
	w := mustOpen(b, fs, memDir, Options{})
	for i := uint64(1); i <= 10000; i += 100 {
		mustAppend(b, w, batch(i, i+99, 1))
	}
	w.Close()
	w = mustOpen(b, fs, memDir, Options{})
	defer w.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := w.Entries(5000, 5100, 1<<30); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendNoSync is the encoding cost alone: 100 records of 128 bytes
// per iteration, written out every MiB, never fsynced.
func BenchmarkAppendNoSync(b *testing.B) {
	w := mustOpen(b, vfs.NewMem(), memDir, Options{SegmentSize: 4 << 20, Logf: func(string, ...any) {}})
	defer w.Close()
	data := make([]byte, 128)
	recs := make([]Record, 100)
	next := uint64(1)
	b.SetBytes(100 * 128)
	b.ReportAllocs()
	for b.Loop() {
		for i := range recs {
			recs[i] = Record{Index: next, Term: 1, Data: data}
			next++
		}
		if err := w.Append(recs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "records/s")
}
