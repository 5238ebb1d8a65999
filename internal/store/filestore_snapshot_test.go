package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// cloneStore copies src's state and messages into a new memory store.
func cloneStore(t testing.TB, src StreamStore) *memStore {
	t.Helper()
	var st StreamState
	src.FastState(&st)
	dst := newMemStore(StoreLimits{})
	next := uint64(1)
	for seq := st.FirstSeq; seq <= st.LastSeq && st.Msgs > 0; seq++ {
		m, err := src.LoadMsg(seq, nil)
		if err != nil {
			continue
		}
		if seq > next {
			_ = dst.SkipMsgs(seq - next)
		}
		if _, err := dst.StoreMsg(m.Subj, m.Hdr, m.Msg, m.TS); err != nil {
			t.Fatalf("clone: %v", err)
		}
		next = seq + 1
	}
	if st.LastSeq+1 > next {
		_ = dst.SkipMsgs(st.LastSeq + 1 - next)
	}
	return dst
}

// A snapshot directory keeps the state of its point whatever the store
// does after it (appends, removals, erasures, purges, compaction,
// compression, checkpoints), and a store restored from it can erase
// without changing it.
func TestFileStoreSnapshotDir(t *testing.T) {
	variants := []struct {
		name string
		mk   func(t *testing.T) *fsHarness
	}{
		{"os", func(t *testing.T) *fsHarness { return newOSHarness(t, FileStoreConfig{BlockSize: 2048}, StoreLimits{}) }},
		{"mem", func(t *testing.T) *fsHarness {
			return newMemHarness(t, FileStoreConfig{BlockSize: 1024}, StoreLimits{})
		}},
		{"s2", func(t *testing.T) *fsHarness {
			return newMemHarness(t, FileStoreConfig{BlockSize: 4096, Compression: "s2"}, StoreLimits{})
		}},
	}
	type taken struct {
		dir  string
		want *memStore
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 4; seed++ {
				rng := rand.New(rand.NewPCG(seed, 11))
				h := v.mk(t)
				base := filepath.Dir(h.dir)
				model := newMemStore(StoreLimits{})
				var snaps []taken
				for step := 0; step < 600; step++ {
					storeOp(t, rng, h.fs, model, step)
					if rng.IntN(50) != 0 {
						continue
					}
					dir := filepath.Join(base, fmt.Sprintf("snap-%d-%d", seed, step))
					s, err := h.fs.SnapshotTo(dir)
					if err != nil {
						t.Fatalf("seed %d step %d: snapshot: %v", seed, step, err)
					}
					if err := s.Write(); err != nil {
						t.Fatalf("seed %d step %d: writing snapshot: %v", seed, step, err)
					}
					snaps = append(snaps, taken{dir, cloneStore(t, model)})
				}
				if len(snaps) == 0 {
					t.Fatalf("seed %d took no snapshot", seed)
				}
				h.fs.Sync()
				for i, sn := range snaps {
					what := fmt.Sprintf("seed %d snapshot %s", seed, filepath.Base(sn.dir))
					restored := restoreForTest(t, h, sn.dir, fmt.Sprintf("restored-%d-%d", seed, i))
					compareStores(t, restored, sn.want, what)
					// Erase every other live message of the restored store:
					// the snapshot must not change.
					var st StreamState
					restored.FastState(&st)
					for seq := st.FirstSeq; seq <= st.LastSeq; seq += 2 {
						restored.EraseMsg(seq)
					}
					restored.Stop()
					again := restoreForTest(t, h, sn.dir, fmt.Sprintf("again-%d-%d", seed, i))
					compareStores(t, again, sn.want, what+" after erasures in a store restored from it")
					again.Stop()
				}
				h.fs.Stop()
			}
		})
	}
}

func restoreForTest(t *testing.T, h *fsHarness, snapDir, name string) *fileStore {
	t.Helper()
	dir := filepath.Join(filepath.Dir(h.dir), name)
	if err := RestoreLinked(h.fsys, snapDir, dir); err != nil {
		t.Fatalf("restore %s: %v", snapDir, err)
	}
	var logs logSink
	cfg := h.cfg
	cfg.Logf = logs.logf
	fs := mustOpenFileStore(t, h.fsys, dir, cfg, StoreLimits{})
	fs.MarkShared()
	if l := logs.take(); len(l) > 0 { // e.g. a checkpoint not taken
		t.Fatalf("restoring %s: %v", snapDir, l)
	}
	return fs
}

// An erase that fails to rewrite a shared block leaves it shared: the next
// erase must not write over the snapshot's file in place.
func TestFileStoreSnapshotEraseRewriteFails(t *testing.T) {
	h := newMemHarness(t, FileStoreConfig{BlockSize: 1024}, StoreLimits{})
	for i := 0; i < 60; i++ {
		if _, err := h.fs.StoreMsg(fmt.Sprintf("s.%d", i%3), nil, []byte(fmt.Sprintf("payload %02d", i)), int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	snapDir := "/data/snap"
	s, err := h.fs.SnapshotTo(snapDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(); err != nil {
		t.Fatal(err)
	}
	want := cloneStore(t, h.fs)
	h.mem.InjectError(func(op, name string) error {
		if op == "write" && strings.HasSuffix(name, ".blk.tmp") {
			return errors.New("disk full")
		}
		return nil
	})
	if _, err := h.fs.EraseMsg(2); err == nil {
		t.Fatal("the erase's rewrite was to fail")
	}
	h.mem.InjectError(nil)
	if ok, err := h.fs.EraseMsg(3); !ok || err != nil {
		t.Fatalf("erase 3: %v %v", ok, err)
	}
	restored := restoreForTest(t, h, snapDir, "restored")
	compareStores(t, restored, want, "snapshot after a failed and a good erase")
	restored.Stop()
}

// A store that once listed a lost message still opens as a linked copy
// with the same loss, and reading all its messages loses nothing more (a
// stream expanding its snapshot refuses a copy that loses messages).
func TestLinkedCopyKeepsEarlierLoss(t *testing.T) {
	groupDir := t.TempDir()
	fs := mustOpenFileStore(t, vfs.Default, filepath.Join(t.TempDir(), "msgs"), FileStoreConfig{BlockSize: 2048}, StoreLimits{})
	defer fs.Stop()
	for i := 0; i < 100; i++ {
		if _, err := fs.StoreMsg(fmt.Sprintf("s.%d", i%7), nil, []byte(fmt.Sprintf("payload %d", i)), int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	fs.mu.Lock()
	fs.loseSeq(fs.findBlock(1), 1)
	fs.mu.Unlock()
	lost := len(fs.State().Lost.Msgs)
	if lost == 0 {
		t.Fatal("no loss recorded")
	}
	snapDir := filepath.Join(groupDir, "snaps", "100")
	s, err := fs.SnapshotTo(snapDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(); err != nil {
		t.Fatal(err)
	}
	var want StreamState
	fs.FastState(&want)
	cp, closeCopy, err := OpenLinkedCopy(vfs.Default, snapDir, filepath.Join(groupDir, "scratch", "msgs"))
	if err != nil {
		t.Fatal(err)
	}
	defer closeCopy()
	var got StreamState
	cp.FastState(&got)
	if got.Msgs != want.Msgs || got.FirstSeq != want.FirstSeq || got.LastSeq != want.LastSeq {
		t.Fatalf("copy holds %d messages %d..%d, want %d %d..%d", got.Msgs, got.FirstSeq, got.LastSeq,
			want.Msgs, want.FirstSeq, want.LastSeq)
	}
	n := uint64(0)
	if err := cp.(Watchable).ReadLive(want.FirstSeq, want.LastSeq, &StoreMsg{}, func(*StoreMsg) { n++ }, func() {}); err != nil {
		t.Fatal(err)
	}
	if n != want.Msgs {
		t.Fatalf("read %d messages, want %d", n, want.Msgs)
	}
	if after := cp.State().Lost; after == nil || len(after.Msgs) != lost {
		t.Fatalf("copy lists %v lost, want %d", after, lost)
	}
}
