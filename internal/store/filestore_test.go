package store

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

func init() {
	storeFactories["file"] = func(t *testing.T, l StoreLimits) StreamStore {
		return mustOpenFileStore(t, vfs.Default, t.TempDir(), FileStoreConfig{BlockSize: 4096}, l)
	}
	storeFactories["file-s2"] = func(t *testing.T, l StoreLimits) StreamStore {
		return mustOpenFileStore(t, vfs.Default, t.TempDir(), FileStoreConfig{BlockSize: 4096, Compression: "s2"}, l)
	}
	storeFactories["file-mem"] = func(t *testing.T, l StoreLimits) StreamStore {
		return mustOpenFileStore(t, vfs.NewMem(), "/store", FileStoreConfig{BlockSize: 4096}, l)
	}
	// Under an open-file budget of one (vfs.Pool): the block, index and
	// reader files closed between uses and opened again by the next one.
	storeFactories["file-pooled"] = func(t *testing.T, l StoreLimits) StreamStore {
		return mustOpenFileStore(t, vfs.NewPool(vfs.Default, 1), t.TempDir(), FileStoreConfig{BlockSize: 4096}, l)
	}
}

func mustOpenFileStore(t testing.TB, fsys vfs.FS, dir string, cfg FileStoreConfig, l StoreLimits) *fileStore {
	t.Helper()
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	fs, err := newFileStore(fsys, dir, cfg, l)
	if err != nil {
		t.Fatalf("open file store: %v", err)
	}
	return fs
}

// fsHarness opens, stops, crashes and reopens one file store directory.
type fsHarness struct {
	t    testing.TB
	fsys vfs.FS
	mem  *vfs.MemFS // nil on the OS file system
	dir  string
	cfg  FileStoreConfig
	lim  StoreLimits
	fs   *fileStore
	logs logSink
}

type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (l *logSink) logf(format string, args ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *logSink) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.lines
	l.lines = nil
	return out
}

func newMemHarness(t testing.TB, cfg FileStoreConfig, lim StoreLimits) *fsHarness {
	m := vfs.NewMem()
	h := &fsHarness{t: t, fsys: m, mem: m, dir: "/data/stream", cfg: cfg, lim: lim}
	h.open()
	return h
}

func newOSHarness(t testing.TB, cfg FileStoreConfig, lim StoreLimits) *fsHarness {
	h := &fsHarness{t: t, fsys: vfs.Default, dir: t.TempDir(), cfg: cfg, lim: lim}
	h.open()
	return h
}

func (h *fsHarness) open() {
	h.t.Helper()
	cfg := h.cfg
	cfg.Logf = h.logs.logf
	fs, err := newFileStore(h.fsys, h.dir, cfg, h.lim)
	if err != nil {
		h.t.Fatalf("open: %v", err)
	}
	h.fs = fs
}

func (h *fsHarness) restart() {
	h.t.Helper()
	if err := h.fs.Stop(); err != nil {
		h.t.Fatalf("stop: %v", err)
	}
	h.open()
}

// crash loses everything not synced and reopens; keep chooses how many
// unsynced bytes of each file survive (nil: none).
func (h *fsHarness) crash(keep func(string, int) int) {
	h.t.Helper()
	h.mem.CrashKeep(keep)
	h.fs = nil // the process died: the old store must not touch the disk again
	h.open()
}

func (h *fsHarness) files(suffix string) []string {
	ents, _ := h.fsys.ReadDir(h.dir)
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), suffix) {
			out = append(out, h.dir+"/"+e.Name())
		}
	}
	return out
}

// compareStores checks that a and b report the same state and messages.
func compareStores(t testing.TB, a, b StreamStore, what string) {
	t.Helper()
	if fs, ok := a.(*fileStore); ok {
		checkBlockIndexes(t, fs, what)
	}
	sa, sb := a.State(), b.State()
	sa.Lost, sb.Lost = nil, nil
	if !reflect.DeepEqual(sa, sb) {
		t.Fatalf("%s: state\n got %+v\nwant %+v", what, sa, sb)
	}
	if ga, gb := a.SubjectsState(">"), b.SubjectsState(">"); !reflect.DeepEqual(ga, gb) {
		t.Fatalf("%s: subjects\n got %v\nwant %v", what, ga, gb)
	}
	for seq := sb.FirstSeq; seq <= sb.LastSeq+1; seq++ {
		ma, ea := a.LoadMsg(seq, nil)
		mb, eb := b.LoadMsg(seq, nil)
		if ea != eb || (ea == nil && !sameMsg(ma, mb)) {
			t.Fatalf("%s: load %d: got %+v %v want %+v %v", what, seq, ma, ea, mb, eb)
		}
	}
	// memStore answers LastSeqForSubject("") with LastSeq even when that
	// message is gone; the file store answers the last live message.
	var lastLive uint64
	for seq := sb.LastSeq; seq >= sb.FirstSeq && seq > 0 && lastLive == 0; seq-- {
		if _, err := b.LoadMsg(seq, nil); err == nil {
			lastLive = seq
		}
	}
	if x := a.LastSeqForSubject(""); x != lastLive {
		t.Fatalf("%s: last(\"\") %d want %d", what, x, lastLive)
	}
	for _, f := range []string{"", "m.1.*", "m.2.1", "m.*.0", "m.>", "none"} {
		if x, y := a.LastSeqForSubject(f), b.LastSeqForSubject(f); x != y && f != "" {
			t.Fatalf("%s: last(%q) %d want %d", what, f, x, y)
		}
		for _, start := range []uint64{0, sb.FirstSeq + 3, sb.LastSeq / 2} {
			if x, y := a.FilteredState(start, f), b.FilteredState(start, f); x != y {
				t.Fatalf("%s: filtered(%d,%q) %+v want %+v", what, start, f, x, y)
			}
			ma, ea := a.LoadNextMsg(f, start, nil)
			mb, eb := b.LoadNextMsg(f, start, nil)
			if ea != eb || (ea == nil && !sameMsg(ma, mb)) {
				t.Fatalf("%s: next(%q,%d) %+v %v want %+v %v", what, f, start, ma, ea, mb, eb)
			}
		}
	}
}

func sameMsg(a, b *StoreMsg) bool {
	return a.Seq == b.Seq && a.Subj == b.Subj && a.TS == b.TS &&
		string(a.Hdr) == string(b.Hdr) && string(a.Msg) == string(b.Msg)
}

// storeOp applies one random operation to both stores and checks they
// answer the same. It returns the operation's name.
func storeOp(t testing.TB, rng *rand.Rand, a, b StreamStore, step int) string {
	t.Helper()
	var st StreamState
	b.FastState(&st)
	check := func(name string, x, y any, ex, ey error) string {
		t.Helper()
		if !reflect.DeepEqual(x, y) || (ex == nil) != (ey == nil) {
			t.Fatalf("step %d %s: got %v %v want %v %v", step, name, x, ex, y, ey)
		}
		return name
	}
	randSeq := func() uint64 { return uint64(rng.IntN(int(st.LastSeq)+3)) + st.FirstSeq - min(st.FirstSeq, 2) }
	switch op := rng.IntN(100); {
	case op < 62:
		x, ex, y, ey := randomStore(rng, a, b, step)
		return check("store", x, y, ex, ey)
	case op < 74:
		s := randSeq()
		x, ex := a.RemoveMsg(s)
		y, ey := b.RemoveMsg(s)
		return check("remove", x, y, ex, ey)
	case op < 78:
		s := randSeq()
		x, ex := a.EraseMsg(s)
		y, ey := b.EraseMsg(s)
		return check("erase", x, y, ex, ey)
	case op < 81:
		subj := []string{"", "m.1.*", "m.2.1", "m.>", "m.*.2"}[rng.IntN(5)]
		seq := []uint64{0, randSeq()}[rng.IntN(2)]
		keep := uint64(rng.IntN(3))
		x, ex := a.PurgeEx(subj, seq, keep)
		y, ey := b.PurgeEx(subj, seq, keep)
		return check("purgeex", x, y, ex, ey)
	case op < 84:
		s := st.FirstSeq + uint64(rng.IntN(8))
		if rng.IntN(5) == 0 {
			s = st.LastSeq + uint64(rng.IntN(4))
		}
		x, ex := a.Compact(s)
		y, ey := b.Compact(s)
		return check("compact", x, y, ex, ey)
	case op < 86:
		n := uint64(1 + rng.IntN(4))
		return check("skip", nil, nil, a.SkipMsgs(n), b.SkipMsgs(n))
	case op < 88:
		cutoff := int64((step - 20 - rng.IntN(40)) * 10)
		x, ex := a.ExpireBefore(cutoff)
		y, ey := b.ExpireBefore(cutoff)
		return check("expire", x, y, ex, ey)
	case op < 89:
		x, ex := a.Purge()
		y, ey := b.Purge()
		return check("purge", x, y, ex, ey)
	case op < 90:
		// Per-subject and global limits are not set together: memStore
		// applies them subject by subject in map order, so its outcome is
		// not deterministic when both apply at once.
		l := StoreLimits{MaxMsgsPerSubject: int64(rng.IntN(3) * 3)}
		if rng.IntN(2) == 0 {
			l = StoreLimits{MaxMsgs: int64(rng.IntN(3) * 30)}
			if rng.IntN(3) == 0 {
				l.MaxBytes = int64(5000 + rng.IntN(20000))
			}
		}
		return check("limits", nil, nil, a.UpdateLimits(l), b.UpdateLimits(l))
	default:
		if err := a.Sync(); err != nil {
			t.Fatalf("step %d sync: %v", step, err)
		}
		return "sync"
	}
}

// randomStore stores the same random message in both stores.
func randomStore(rng *rand.Rand, a, b StreamStore, step int) (uint64, error, uint64, error) {
	subj := fmt.Sprintf("m.%d.%d", rng.IntN(4), rng.IntN(3))
	var hdr []byte
	if rng.IntN(4) == 0 {
		hdr = []byte(fmt.Sprintf("NATS/1.0\r\nK: %d\r\n\r\n", step))
	}
	msg := make([]byte, rng.IntN(200))
	if rng.IntN(30) == 0 {
		msg = make([]byte, 3000+rng.IntN(3000))
	}
	for i := range msg {
		msg[i] = byte(rng.IntN(256))
	}
	ts := int64(step*10 + rng.IntN(15))
	x, ex := a.StoreMsg(subj, hdr, msg, ts)
	y, ey := b.StoreMsg(subj, hdr, msg, ts)
	return x, ex, y, ey
}

// TestFileStoreModelRestart drives a file store and the memory store with
// the same random operations, restarting the file store now and then
// (sometimes without its checkpoint or index files), and compares them.
func TestFileStoreModelRestart(t *testing.T) {
	variants := []struct {
		name  string
		seeds uint64
		mk    func(t *testing.T) *fsHarness
	}{
		{"os", 2, func(t *testing.T) *fsHarness { return newOSHarness(t, FileStoreConfig{BlockSize: 2048}, StoreLimits{}) }},
		{"mem", 8, func(t *testing.T) *fsHarness {
			return newMemHarness(t, FileStoreConfig{BlockSize: 1024}, StoreLimits{})
		}},
		{"s2", 8, func(t *testing.T) *fsHarness {
			return newMemHarness(t, FileStoreConfig{BlockSize: 4096, Compression: "s2"}, StoreLimits{})
		}},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			for seed := uint64(1); seed <= v.seeds; seed++ {
				rng := rand.New(rand.NewPCG(seed, 7))
				h := v.mk(t)
				model := newMemStore(StoreLimits{})
				for step := 0; step < 700; step++ {
					op := storeOp(t, rng, h.fs, model, step)
					var x, y StreamState
					h.fs.FastState(&x)
					model.FastState(&y)
					if x.Msgs != y.Msgs || x.FirstSeq != y.FirstSeq || x.LastSeq != y.LastSeq || x.Bytes != y.Bytes {
						t.Fatalf("seed %d step %d after %s: %+v want %+v", seed, step, op, x, y)
					}
					if step%50 == 49 {
						compareStores(t, h.fs, model, fmt.Sprintf("seed %d step %d", seed, step))
					}
					if rng.IntN(60) == 0 {
						h.fs.Sync()
						h.lim = model.limits
						h.restartDamaged(rng)
						compareStores(t, h.fs, model, fmt.Sprintf("seed %d step %d after restart", seed, step))
					}
				}
				h.lim = model.limits
				h.restart()
				compareStores(t, h.fs, model, fmt.Sprintf("seed %d final", seed))
				if logs := h.logs.take(); hasCorruption(logs) {
					t.Fatalf("seed %d: corruption reported on clean restarts: %v", seed, logs)
				}
				h.fs.Stop()
			}
		})
	}
}

// restartDamaged stops the store and, at random, removes its checkpoint or
// index files before reopening: they must be rebuilt from the blocks.
func (h *fsHarness) restartDamaged(rng *rand.Rand) {
	h.t.Helper()
	if err := h.fs.Stop(); err != nil {
		h.t.Fatalf("stop: %v", err)
	}
	switch rng.IntN(4) {
	case 0:
		h.fsys.Remove(h.dir + "/" + fsCheckpointFile)
	case 1:
		for _, f := range h.files(".idx") {
			h.fsys.Remove(f)
		}
	case 2:
		h.fsys.Remove(h.dir + "/" + fsCheckpointFile)
		for _, f := range h.files(".idx") {
			h.fsys.Remove(f)
		}
	}
	h.open()
}

func hasCorruption(logs []string) bool {
	for _, l := range logs {
		if strings.Contains(l, "lost") || strings.Contains(l, "corrupt") || strings.Contains(l, "damaged") {
			return true
		}
	}
	return false
}

// checkBlockIndexes checks the subject index of every block that has one
// loaded: each name once, the name map (when built) agreeing with the
// names, and every offset listed in its subject's postings.
func checkBlockIndexes(t testing.TB, fs *fileStore, what string) {
	t.Helper()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, b := range fs.blocks {
		x := b.idx
		if x == nil {
			continue
		}
		seen := map[string]uint32{}
		for id, name := range x.subjs {
			if prev, dup := seen[name]; dup {
				t.Fatalf("%s: block %d has subject %q twice (ids %d and %d)", what, b.index, name, prev, id)
			}
			seen[name] = uint32(id)
		}
		if x.byName != nil && !reflect.DeepEqual(x.byName, seen) {
			t.Fatalf("%s: block %d name map %v, names %v", what, b.index, x.byName, seen)
		}
		for i, id := range x.ids {
			if id != noID && !slices.Contains(x.posts[id], uint32(i)) {
				t.Fatalf("%s: block %d offset %d (%s) missing from its postings", what, b.index, i, x.subjs[id])
			}
		}
	}
}
