package server

import (
	"sort"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/store"
	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// storeFactory makes an empty store with the given limits for one test.
type storeFactory func(t *testing.T, l StoreLimits) StreamStore

// storeFactories are the stores the stream code runs on (the stores' own
// tests are in internal/store).
var storeFactories = map[string]storeFactory{
	"memory": func(t *testing.T, l StoreLimits) StreamStore { return store.NewMemStore(l) },
	"file": func(t *testing.T, l StoreLimits) StreamStore {
		return mustOpenFileStore(t, vfs.Default, t.TempDir(), FileStoreConfig{BlockSize: 4096}, l)
	},
	"file-s2": func(t *testing.T, l StoreLimits) StreamStore {
		return mustOpenFileStore(t, vfs.Default, t.TempDir(), FileStoreConfig{BlockSize: 4096, Compression: "s2"}, l)
	},
}

func forEachStore(t *testing.T, f func(t *testing.T, mk storeFactory)) {
	names := make([]string, 0, len(storeFactories))
	for n := range storeFactories {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t.Run(n, func(t *testing.T) { f(t, storeFactories[n]) })
	}
}

func mustOpenFileStore(t testing.TB, fsys vfs.FS, dir string, cfg FileStoreConfig, l StoreLimits) StreamStore {
	t.Helper()
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	st, err := store.OpenFileStore(fsys, dir, cfg, l)
	if err != nil {
		t.Fatalf("open file store: %v", err)
	}
	return st
}

func sameMsg(a, b *StoreMsg) bool {
	return a.Seq == b.Seq && a.Subj == b.Subj && a.TS == b.TS &&
		string(a.Hdr) == string(b.Hdr) && string(a.Msg) == string(b.Msg)
}
