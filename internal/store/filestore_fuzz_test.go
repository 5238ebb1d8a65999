package store

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// fuzzRef is a small store written once: its files seed the fuzzer and its
// messages are the only ones a recovered store may ever serve.
type fuzzRef struct {
	mem   *vfs.MemFS
	dir   string
	files []string
	ever  map[uint64]StoreMsg
}

var (
	fuzzRefOnce sync.Once
	fuzzRefVal  *fuzzRef
)

func fuzzReference(t testing.TB) *fuzzRef {
	fuzzRefOnce.Do(func() {
		h := newMemHarness(t, FileStoreConfig{BlockSize: 600, Compression: "s2"}, StoreLimits{})
		ref := &fuzzRef{mem: h.mem, dir: h.dir, ever: map[uint64]StoreMsg{}}
		for i := 1; i <= 60; i++ {
			var hdr []byte
			if i%3 == 0 {
				hdr = []byte(fmt.Sprintf("NATS/1.0\r\nI: %d\r\n\r\n", i))
			}
			seq, _ := h.fs.StoreMsg(fmt.Sprintf("z.%d", i%4), hdr, []byte(fmt.Sprintf("body-%d", i)), int64(1000+i))
			sm, _ := h.fs.LoadMsg(seq, nil)
			ref.ever[seq] = *sm
			switch {
			case i%7 == 0:
				h.fs.RemoveMsg(seq - 3)
			case i%11 == 0:
				h.fs.EraseMsg(seq - 1)
			case i == 30:
				h.fs.Sync()
				h.fs.SkipMsgs(2)
			}
		}
		h.fs.Compact(4)
		h.fs.Stop()
		ents, _ := h.mem.ReadDir(h.dir)
		for _, e := range ents {
			ref.files = append(ref.files, e.Name())
		}
		sort.Strings(ref.files)
		fuzzRefVal = ref
	})
	return fuzzRefVal
}

// FuzzFileStoreRecovery replaces one file of a real store (or adds a block)
// with arbitrary bytes: opening must not fail or panic, the state must be
// self-consistent, and every message served must be one that was stored.
func FuzzFileStoreRecovery(f *testing.F) {
	ref := fuzzReference(f)
	for i, name := range ref.files {
		data, _ := vfs.ReadFile(ref.mem, ref.dir+"/"+name)
		f.Add(uint8(i), data)
		f.Add(uint8(i), data[:len(data)/2])
	}
	f.Add(uint8(len(ref.files)), []byte{})
	// A last block holding only a recFirst record (found by the fuzzer: a
	// block without a base record broke the block search).
	// Garbage then that record in place of the checkpoint's active block: its
	// messages are lost and their sizes unknown.
	f.Add(uint8(14), []byte(strings.Repeat("0", 193)+"$\x00\x00\x00\x04\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x003[\x91N\b\x06v\xed"))
	f.Add(uint8(14), []byte("$\x00\x00\x00\x04\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x003[\x91N\b\x06v\xed"))
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		m := cloneMem(t, ref.mem, ref.dir)
		slot := int(which) % (len(ref.files) + 1)
		name := fmt.Sprintf("%010d.blk", 900)
		if slot < len(ref.files) {
			name = ref.files[slot]
		}
		writeMemFile(t, m, ref.dir+"/"+name, data)
		fs, err := newFileStore(m, ref.dir, FileStoreConfig{BlockSize: 600, Compression: "s2"}, StoreLimits{})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		img := checkSelfConsistent(t, fs, "fuzz")
		for seq, sm := range img.msgs {
			want, ok := ref.ever[seq]
			if !ok || !sameMsg(&sm, &want) {
				t.Fatalf("served %d %+v, never stored as such", seq, sm)
			}
		}
		seq, err := fs.StoreMsg("after", nil, []byte("x"), 1)
		if err != nil {
			t.Fatalf("store after recovery: %v", err)
		}
		if err := fs.Stop(); err != nil {
			t.Fatalf("stop: %v", err)
		}
		fs, err = newFileStore(m, ref.dir, FileStoreConfig{BlockSize: 600, Compression: "s2"}, StoreLimits{})
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		if sm, err := fs.LoadMsg(seq, nil); err != nil || string(sm.Msg) != "x" {
			t.Fatalf("message stored after recovery: %v %v", sm, err)
		}
		checkSelfConsistent(t, fs, "fuzz reopen")
		fs.Stop()
	})
}
