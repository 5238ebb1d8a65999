package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// storeImage is every live message of a store, by sequence.
type storeImage struct {
	msgs map[uint64]StoreMsg
	last uint64
}

func imageOf(t testing.TB, s StreamStore) storeImage {
	t.Helper()
	st := s.State()
	img := storeImage{msgs: map[uint64]StoreMsg{}, last: st.LastSeq}
	for seq := st.FirstSeq; seq <= st.LastSeq; seq++ {
		if sm, err := s.LoadMsg(seq, nil); err == nil {
			img.msgs[seq] = *sm
		}
	}
	return img
}

// checkSelfConsistent verifies that a store's reported state matches a full
// scan of its messages.
func checkSelfConsistent(t testing.TB, s StreamStore, what string) storeImage {
	t.Helper()
	img := imageOf(t, s)
	st := s.State()
	var first uint64
	subjects := map[string]SimpleState{}
	var bytes uint64
	for seq := uint64(1); seq <= img.last; seq++ {
		m, ok := img.msgs[seq]
		if !ok {
			continue
		}
		if first == 0 {
			first = seq
		}
		ss := subjects[m.Subj]
		if ss.Msgs == 0 {
			ss.First = seq
		}
		ss.Msgs++
		ss.Last = seq
		subjects[m.Subj] = ss
		bytes += StoredMsgSize(m.Subj, m.Hdr, m.Msg)
	}
	if first == 0 {
		first = st.LastSeq + 1
	}
	if st.Msgs != uint64(len(img.msgs)) || st.FirstSeq != first || st.Bytes != bytes || st.NumSubjects != len(subjects) {
		t.Fatalf("%s: state %+v but scan finds %d msgs from %d, %d bytes, %d subjects", what, st, len(img.msgs), first, bytes, len(subjects))
	}
	if got := s.SubjectsState(">"); !reflect.DeepEqual(got, subjects) {
		t.Fatalf("%s: subjects state %v, scan %v", what, got, subjects)
	}
	return img
}

// crashChecker remembers what a store must still hold after a crash.
type crashChecker struct {
	ever   map[uint64]StoreMsg // every message ever stored
	synced storeImage          // the model at the last successful Sync
}

func (c *crashChecker) noteStored(m *memStore) {
	if sm, err := m.LoadMsg(m.last, nil); err == nil {
		c.ever[sm.Seq] = *sm
	}
}

// check verifies the recovered store: nothing invented, every message that
// was synced and is still live in the model is there, same content.
func (c *crashChecker) check(t testing.TB, s StreamStore, model *memStore, what string) {
	t.Helper()
	img := checkSelfConsistent(t, s, what)
	for seq, m := range img.msgs {
		want, ok := c.ever[seq]
		if !ok || !sameMsg(&m, &want) {
			t.Fatalf("%s: served %d %+v which was never stored (%+v)", what, seq, m, want)
		}
	}
	for seq, want := range c.synced.msgs {
		if _, live := model.msgs[seq]; !live {
			continue
		}
		got, ok := img.msgs[seq]
		if !ok || !sameMsg(&got, &want) {
			t.Fatalf("%s: synced message %d lost or changed: %+v", what, seq, got)
		}
	}
	if img.last < c.synced.last {
		t.Fatalf("%s: last %d below synced last %d", what, img.last, c.synced.last)
	}
}

// modelFrom rebuilds a memory store holding exactly img, with limits lim
// in force but not applied (as a reopened file store).
func modelFrom(img storeImage, lim StoreLimits) *memStore {
	m := newMemStore(StoreLimits{})
	defer func() { m.limits = lim }()
	for seq := uint64(1); seq <= img.last; seq++ {
		if sm, ok := img.msgs[seq]; ok {
			m.SkipMsgs(seq - m.last - 1)
			m.StoreMsg(sm.Subj, sm.Hdr, sm.Msg, sm.TS)
		}
	}
	m.SkipMsgs(img.last - m.last)
	return m
}

// TestFileStoreCrash runs random operations, syncs and crashes (dropping or
// tearing unsynced bytes) at random, and checks every recovery.
func TestFileStoreCrash(t *testing.T) {
	for _, comp := range []string{"none", "s2"} {
		t.Run(comp, func(t *testing.T) {
			for seed := uint64(1); seed <= 8; seed++ {
				runCrashSeed(t, seed, comp)
			}
		})
	}
}

func runCrashSeed(t *testing.T, seed uint64, comp string) {
	rng := rand.New(rand.NewPCG(seed, 99))
	h := newMemHarness(t, FileStoreConfig{BlockSize: 1024 + uint64(rng.IntN(3000)), Compression: comp}, StoreLimits{})
	model := newMemStore(StoreLimits{})
	c := &crashChecker{ever: map[uint64]StoreMsg{}, synced: storeImage{msgs: map[uint64]StoreMsg{}}}
	for step := 0; step < 1500; step++ {
		switch storeOp(t, rng, h.fs, model, step) {
		case "store":
			c.noteStored(model)
		case "sync":
			c.synced = imageOf(t, model)
		}
		if rng.IntN(80) != 0 {
			continue
		}
		var keep func(string, int) int
		if rng.IntN(2) == 0 {
			keep = func(_ string, n int) int { return rng.IntN(n + 1) }
		}
		h.lim = model.limits
		h.crash(keep)
		what := fmt.Sprintf("seed %d step %d", seed, step)
		c.check(t, h.fs, model, what)
		model = modelFrom(imageOf(t, h.fs), h.lim)
		compareStores(t, h.fs, model, what)
		c.synced = imageOf(t, model) // what recovery found is on disk now
		if err := h.fs.Sync(); err != nil {
			t.Fatalf("%s: sync after recovery: %v", what, err)
		}
	}
	h.fs.Stop()
}

// TestFileStoreTruncateLastBlock cuts the last block at every offset: the
// store must come back with exactly the records before the cut.
func TestFileStoreTruncateLastBlock(t *testing.T) {
	h := newMemHarness(t, FileStoreConfig{BlockSize: 1 << 20}, StoreLimits{})
	var want []StoreMsg
	for i := 1; i <= 40; i++ {
		seq, _ := h.fs.StoreMsg(fmt.Sprintf("t.%d", i%4), nil, []byte(strings.Repeat("x", i)), int64(i))
		sm, _ := h.fs.LoadMsg(seq, nil)
		want = append(want, *sm)
	}
	h.fs.Stop()
	blocks := h.files(".blk")
	last := blocks[len(blocks)-1]
	for _, name := range blocks {
		if data, _ := vfs.ReadFile(h.fsys, name); len(data) > 200 {
			last = name // the block holding the messages
		}
	}
	orig, _ := vfs.ReadFile(h.fsys, last)
	for cut := 0; cut <= len(orig); cut++ {
		for _, withCk := range []bool{true, false} {
			m := cloneMem(t, h.mem, h.dir)
			writeMemFile(t, m, last, orig[:cut])
			if !withCk {
				m.Remove(h.dir + "/" + fsCheckpointFile)
			}
			fs := mustOpenFileStore(t, m, h.dir, FileStoreConfig{BlockSize: 1 << 20}, StoreLimits{})
			img := checkSelfConsistent(t, fs, fmt.Sprintf("cut %d", cut))
			n := len(img.msgs)
			for i := 0; i < n; i++ {
				got, ok := img.msgs[uint64(i+1)]
				if !ok || !sameMsg(&got, &want[i]) {
					t.Fatalf("cut %d: not a prefix: message %d %+v", cut, i+1, got)
				}
			}
			if fits := max(recordsBefore(orig, cut)-1, 0); n != fits {
				t.Fatalf("cut %d: %d messages recovered, %d complete records", cut, n, fits)
			}
			fs.Stop()
		}
	}
}

// recordsBefore counts the complete records in data[:cut].
func recordsBefore(data []byte, cut int) int {
	n := 0
	for off := 0; off < cut; {
		r, ok := decodeRecord(data, off)
		if !ok || off+r.size > cut {
			break
		}
		n++
		off += r.size
	}
	return n
}

func cloneMem(t testing.TB, src *vfs.MemFS, dir string) *vfs.MemFS {
	t.Helper()
	m := vfs.NewMem()
	m.MkdirAll(dir, 0o750)
	ents, _ := src.ReadDir(dir)
	for _, e := range ents {
		data, err := vfs.ReadFile(src, dir+"/"+e.Name())
		if err != nil {
			t.Fatal(err)
		}
		writeMemFile(t, m, dir+"/"+e.Name(), data)
	}
	return m
}

func writeMemFile(t testing.TB, m *vfs.MemFS, name string, data []byte) {
	t.Helper()
	if err := vfs.WriteFileAtomic(m, name, data); err != nil {
		t.Fatal(err)
	}
}

// TestFileStoreBitFlip damages one record of a sealed block: it is reported,
// listed as lost and skipped; everything else is served.
func TestFileStoreBitFlip(t *testing.T) {
	for _, tc := range []struct {
		name   string
		comp   string
		withCk bool
		field  int // byte offset inside the record to damage; -1: payload
	}{
		{"payload", "none", true, -1},
		{"payload-nockpt", "none", false, -1},
		{"length", "none", true, 1},
		{"length-nockpt", "none", false, 1},
		{"seq", "none", false, 9},
		{"checksum", "none", true, -2},
		{"s2", "s2", true, 0},
		{"s2-nockpt", "s2", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) { runBitFlip(t, tc.comp, tc.withCk, tc.field) })
	}
}

func runBitFlip(t *testing.T, comp string, withCk bool, field int) {
	h := newMemHarness(t, FileStoreConfig{BlockSize: 2048, Compression: comp}, StoreLimits{})
	var want []StoreMsg
	for i := 1; i <= 120; i++ {
		seq, _ := h.fs.StoreMsg(fmt.Sprintf("f.%d", i%5), []byte("NATS/1.0\r\n\r\n"), []byte(fmt.Sprintf("payload %d", i)), int64(i))
		sm, _ := h.fs.LoadMsg(seq, nil)
		want = append(want, *sm)
	}
	h.fs.Stop()
	target := h.dir + "/0000000003.blk"
	if comp == "s2" {
		target = h.dir + "/0000000003.blz"
	}
	data, err := vfs.ReadFile(h.fsys, target)
	if err != nil {
		t.Fatalf("read %s: %v", target, err)
	}
	off := int64(len(data) / 2)
	if comp != "s2" {
		pb := parseBlockData(data)
		pr := pb.recs[len(pb.recs)/2]
		switch field {
		case -1:
			off = int64(pr.off+pr.size) - 12
		case -2:
			off = int64(pr.off+pr.size) - 3
		default:
			off = int64(pr.off) + int64(field)
		}
	}
	h.mem.FlipBit(target, off, 3)
	if !withCk {
		h.fsys.Remove(h.dir + "/" + fsCheckpointFile)
	}
	h.open()
	img := imageOf(t, h.fs) // loads everything, so damage is found
	st := h.fs.State()
	if st.Lost == nil || len(st.Lost.Msgs) == 0 {
		t.Fatalf("no lost messages reported: %+v", st)
	}
	if logs := h.logs.take(); !hasCorruption(logs) {
		t.Fatalf("damage not logged: %v", logs)
	}
	for _, seq := range st.Lost.Msgs {
		if _, err := h.fs.LoadMsg(seq, nil); err != ErrStoreMsgNotFound {
			t.Fatalf("lost %d still loads: %v", seq, err)
		}
	}
	if comp != "s2" && len(st.Lost.Msgs) != 1 {
		t.Fatalf("one damaged record, lost %v", st.Lost.Msgs)
	}
	if len(img.msgs)+len(st.Lost.Msgs) != len(want) {
		t.Fatalf("%d served + %d lost != %d stored", len(img.msgs), len(st.Lost.Msgs), len(want))
	}
	for seq, m := range img.msgs {
		if !sameMsg(&m, &want[seq-1]) {
			t.Fatalf("served %d changed: %+v", seq, m)
		}
	}
	checkSelfConsistent(t, h.fs, "after damage")
	h.restart()
	if st2 := h.fs.State(); st2.Lost == nil || !reflect.DeepEqual(st2.Lost.Msgs, st.Lost.Msgs) || st2.Msgs != st.Msgs {
		t.Fatalf("after restart %+v, before %+v", st2, st)
	}
	h.fs.Stop()
}

// TestFileStoreInjectedErrors fails writes, syncs, opens and renames at
// random: operations return the error, the store refuses further writes,
// and what was synced survives a crash.
func TestFileStoreInjectedErrors(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 5))
		h := newMemHarness(t, FileStoreConfig{BlockSize: 1500, Compression: []string{"none", "s2"}[seed%2]}, StoreLimits{})
		model := newMemStore(StoreLimits{})
		c := &crashChecker{ever: map[uint64]StoreMsg{}, synced: storeImage{msgs: map[uint64]StoreMsg{}}}
		boom := errors.New("injected")
		failAt := 50 + rng.IntN(400)
		op := []string{"write", "sync", "open", "rename", "syncdir"}[rng.IntN(5)]
		calls := 0
		h.mem.InjectError(func(o, name string) error {
			if o == op {
				if calls++; calls > failAt {
					return boom
				}
			}
			return nil
		})
		failed := false
		for step := 0; step < 800 && !failed; step++ {
			failed = runOpUntilError(t, rng, h, model, c, step)
		}
		h.mem.InjectError(nil)
		h.crash(nil)
		c.check(t, h.fs, model, fmt.Sprintf("seed %d (%s fails after %d)", seed, op, failAt))
		h.fs.Stop()
	}
}

// runOpUntilError applies one random operation to the file store (and the
// model when it succeeds); it reports whether the store failed.
func runOpUntilError(t *testing.T, rng *rand.Rand, h *fsHarness, model *memStore, c *crashChecker, step int) bool {
	subj := fmt.Sprintf("e.%d", rng.IntN(4))
	var err error
	switch r := rng.IntN(10); {
	case r < 6:
		msg := []byte(fmt.Sprintf("m%d-%s", step, strings.Repeat("z", rng.IntN(300))))
		var seq uint64
		if seq, err = h.fs.StoreMsg(subj, nil, msg, int64(step)); err == nil {
			if mseq, _ := model.StoreMsg(subj, nil, msg, int64(step)); mseq != seq {
				t.Fatalf("seq %d want %d", seq, mseq)
			}
			c.noteStored(model)
		}
	case r < 8:
		seq := uint64(rng.IntN(int(model.last) + 1))
		var ok bool
		if ok, err = h.fs.RemoveMsg(seq); err == nil && ok {
			model.RemoveMsg(seq)
		}
	default:
		if err = h.fs.Sync(); err == nil {
			c.synced = imageOf(t, model)
		}
	}
	if err == nil {
		return false
	}
	if _, err2 := h.fs.StoreMsg("x", nil, nil, 0); err2 == nil {
		t.Fatalf("store accepted a write after failing with %v", err)
	}
	return true
}

// TestFileStoreRandomDamage flips random bits in a stopped store's files:
// the store must open, serve only messages it stored, stay consistent, and
// account for every message it held: each is served or listed as lost.
func TestFileStoreRandomDamage(t *testing.T) {
	for _, comp := range []string{"none", "s2"} {
		h := newMemHarness(t, FileStoreConfig{BlockSize: 1024, Compression: comp}, StoreLimits{})
		ever := map[uint64]StoreMsg{}
		for i := 1; i <= 300; i++ {
			seq, _ := h.fs.StoreMsg(fmt.Sprintf("d.%d", i%6), nil, []byte(fmt.Sprintf("damage-%d", i)), int64(i))
			sm, _ := h.fs.LoadMsg(seq, nil)
			ever[seq] = *sm
			if i%5 == 0 {
				h.fs.RemoveMsg(uint64(i - 3))
			}
			if i%50 == 0 {
				h.fs.Sync()
			}
		}
		before := imageOf(t, h.fs)
		h.fs.Stop()
		ents, _ := h.mem.ReadDir(h.dir)
		rng := rand.New(rand.NewPCG(3, uint64(len(comp))))
		for iter := 0; iter < 150; iter++ {
			m := cloneMem(t, h.mem, h.dir)
			name := h.dir + "/" + ents[rng.IntN(len(ents))].Name()
			data, _ := vfs.ReadFile(m, name)
			for k := 0; k < 1+rng.IntN(3) && len(data) > 0; k++ {
				m.FlipBit(name, int64(rng.IntN(len(data))), uint(rng.IntN(8)))
			}
			fs := mustOpenFileStore(t, m, h.dir, FileStoreConfig{BlockSize: 1024, Compression: comp}, StoreLimits{})
			what := fmt.Sprintf("%s iter %d (%s)", comp, iter, name)
			img := checkSelfConsistent(t, fs, what)
			lost := map[uint64]bool{}
			if st := fs.State(); st.Lost != nil {
				for _, s := range st.Lost.Msgs {
					lost[s] = true
				}
			}
			for seq, sm := range img.msgs {
				if want, ok := ever[seq]; !ok || !sameMsg(&sm, &want) {
					t.Fatalf("%s: served %d %+v, never stored as such", what, seq, sm)
				}
			}
			for seq := range before.msgs {
				if _, ok := img.msgs[seq]; !ok && !lost[seq] {
					t.Fatalf("%s: message %d vanished without being reported lost", what, seq)
				}
			}
			fs.Stop()
		}
	}
}
