package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

func benchSubjects(n int) []string {
	subjs := make([]string, n)
	for i := range subjs {
		subjs[i] = fmt.Sprintf("bench.sub.%d", i)
	}
	return subjs
}

func BenchmarkFileStoreStoreMsg(b *testing.B) {
	benchStoreSubjects(b, benchSubjects(1000))
}

func BenchmarkFileStoreStoreMsgLimits(b *testing.B) {
	fs := mustOpenFileStore(b, vfs.Default, b.TempDir(), FileStoreConfig{}, StoreLimits{MaxMsgs: 100_000})
	defer fs.Stop()
	subjs := benchSubjects(1000)
	msg := make([]byte, 128)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := fs.StoreMsg(subjs[i%len(subjs)], nil, msg, int64(i)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFileStoreLoadMsg(b *testing.B) {
	fs := mustOpenFileStore(b, vfs.Default, b.TempDir(), FileStoreConfig{}, StoreLimits{})
	defer fs.Stop()
	subjs := benchSubjects(1000)
	msg := make([]byte, 128)
	const n = 100_000
	for i := 0; i < n; i++ {
		fs.StoreMsg(subjs[i%len(subjs)], nil, msg, int64(i))
	}
	var sm StoreMsg
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := fs.LoadMsg(uint64(n-i%10_000), &sm); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFileStoreLoadLastMsg(b *testing.B) {
	fs := mustOpenFileStore(b, vfs.Default, b.TempDir(), FileStoreConfig{}, StoreLimits{})
	defer fs.Stop()
	subjs := benchSubjects(1000)
	msg := make([]byte, 128)
	for i := 0; i < 100_000; i++ {
		fs.StoreMsg(subjs[i%len(subjs)], nil, msg, int64(i))
	}
	var sm StoreMsg
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := fs.LoadLastMsg(subjs[i%len(subjs)], &sm); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFileStoreRestart reopens a store of 1,000,000 messages over
// 10,000 subjects after a clean Stop.
func BenchmarkFileStoreRestart(b *testing.B) {
	dir := b.TempDir()
	fs := mustOpenFileStore(b, vfs.Default, dir, FileStoreConfig{}, StoreLimits{})
	subjs := benchSubjects(10_000)
	msg := make([]byte, 128)
	start := time.Now()
	for i := 0; i < 1_000_000; i++ {
		if _, err := fs.StoreMsg(subjs[i%len(subjs)], nil, msg, int64(i)); err != nil {
			b.Fatal(err)
		}
	}
	for seq := uint64(1); seq <= 1_000_000; seq += 97 {
		fs.RemoveMsg(seq)
	}
	want := fs.State()
	if err := fs.Stop(); err != nil {
		b.Fatal(err)
	}
	b.Logf("stored 1M messages in %v", time.Since(start))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fs = mustOpenFileStore(b, vfs.Default, dir, FileStoreConfig{}, StoreLimits{})
		b.StopTimer()
		var st StreamState
		fs.FastState(&st)
		if st.Msgs != want.Msgs || st.LastSeq != want.LastSeq || st.NumSubjects != 10_000 {
			b.Fatalf("reopened state %+v", st)
		}
		fs.Stop()
		b.StartTimer()
	}
}

func BenchmarkFileStoreStoreMsgMemFS(b *testing.B) {
	fs := mustOpenFileStore(b, vfs.NewMem(), "/bench", FileStoreConfig{}, StoreLimits{})
	defer fs.Stop()
	subjs := benchSubjects(1000)
	msg := make([]byte, 128)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := fs.StoreMsg(subjs[i%len(subjs)], nil, msg, int64(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFileStoreLoadMsgRandom reads random old messages of a store of
// 1,000,000 messages reopened after a clean Stop (nothing cached).
func BenchmarkFileStoreLoadMsgRandom(b *testing.B) {
	dir := b.TempDir()
	fs := mustOpenFileStore(b, vfs.Default, dir, FileStoreConfig{}, StoreLimits{})
	subjs := benchSubjects(1000)
	msg := make([]byte, 128)
	const n = 1_000_000
	for i := 0; i < n; i++ {
		fs.StoreMsg(subjs[i%len(subjs)], nil, msg, int64(i))
	}
	fs.Stop()
	fs = mustOpenFileStore(b, vfs.Default, dir, FileStoreConfig{}, StoreLimits{})
	defer fs.Stop()
	var sm StoreMsg
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := fs.LoadMsg(uint64(1+(i*7919)%n), &sm); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFileStoreStoreMsgFresh stores every message on a subject never
// seen before (the shape of compare-and-set creates); OneSubject is the
// same with a single subject, so the difference is the per-subject cost.
func BenchmarkFileStoreStoreMsgFresh(b *testing.B) {
	benchStoreSubjects(b, benchSubjects(b.N))
}

func BenchmarkFileStoreStoreMsgOneSubject(b *testing.B) {
	benchStoreSubjects(b, []string{"bench.one"})
}

func benchStoreSubjects(b *testing.B, subjs []string) {
	fs := mustOpenFileStore(b, vfs.Default, b.TempDir(), FileStoreConfig{}, StoreLimits{})
	defer fs.Stop()
	msg := make([]byte, 128)
	b.SetBytes(128)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := fs.StoreMsg(subjs[i%len(subjs)], nil, msg, int64(i)); err != nil {
			b.Fatal(err)
		}
	}
}
