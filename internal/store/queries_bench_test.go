package store

import (
	"strconv"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// BenchmarkNumPending counts a consumer's pending messages in a stream of
// 100k messages on 10k subjects kv.<g>.<n> (g in 0..9), ten rounds of
// every subject, from the start and from the middle (where every subject
// has messages on both sides).
func BenchmarkNumPending(b *testing.B) {
	const subjs, rounds = 10000, 10
	stores := queryBenchStores(b, subjs, rounds)
	cases := []struct {
		name    string
		filters []string
		lastPer bool
	}{
		{"none", nil, false},
		{"literal", []string{"kv.3.77"}, false},
		{"wild-10pct", []string{"kv.3.*"}, false},
		{"wild-all", []string{"kv.>"}, false},
		{"wild-10pct-lastper", []string{"kv.3.*"}, true},
	}
	for _, name := range []string{"memory", "file"} {
		for _, c := range cases {
			for _, from := range []uint64{1, subjs * rounds / 2} {
				b.Run(name+"/"+c.name+"/from="+strconv.FormatUint(from, 10), func(b *testing.B) {
					for b.Loop() {
						stores[name].NumPending(from, c.filters, c.lastPer)
					}
				})
			}
		}
	}
}

// queryBenchStores fills a memory and a file store with rounds of one
// 64-byte message to each of subjs subjects kv.<g>.<n>, message i at
// timestamp i.
func queryBenchStores(b *testing.B, subjs, rounds int) map[string]StreamStore {
	stores := map[string]StreamStore{"memory": newMemStore(StoreLimits{})}
	fs := mustOpenFileStore(b, vfs.Default, b.TempDir(), FileStoreConfig{}, StoreLimits{})
	b.Cleanup(func() { fs.Stop() })
	stores["file"] = fs
	msg := make([]byte, 64)
	for _, s := range stores {
		for r := 0; r < rounds; r++ {
			for i := 0; i < subjs; i++ {
				if _, err := s.StoreMsg("kv."+strconv.Itoa(i%10)+"."+strconv.Itoa(i/10), nil, msg, int64(r*subjs+i)); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	return stores
}

// BenchmarkSeqAtTime finds the message at a time in the middle of 100k
// messages (a consumer created with opt_start_time), and LastMatching a
// wildcard over their 10k subjects (deliver last).
func BenchmarkSeqAtTime(b *testing.B) {
	stores := queryBenchStores(b, 10000, 10)
	for _, name := range []string{"memory", "file"} {
		b.Run(name+"/seq-at-time", func(b *testing.B) {
			for b.Loop() {
				if seq := stores[name].SeqAtTime(50000); seq != 50001 {
					b.Fatal(seq)
				}
			}
		})
		b.Run(name+"/last-matching-wild", func(b *testing.B) {
			for b.Loop() {
				stores[name].LastMatching([]string{"kv.3.*"})
			}
		})
	}
}
