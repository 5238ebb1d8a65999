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
	stores := map[string]StreamStore{"memory": newMemStore(StoreLimits{})}
	fs := mustOpenFileStore(b, vfs.Default, b.TempDir(), FileStoreConfig{}, StoreLimits{})
	defer fs.Stop()
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
