package store

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// diskBytes returns the raw content of every block file (decompressed).
func diskBytes(t testing.TB, h *fsHarness) []byte {
	t.Helper()
	var all []byte
	for _, suffix := range []string{".blk", ".blz"} {
		for _, name := range h.files(suffix) {
			data, err := vfs.ReadFile(h.fsys, name)
			if err != nil {
				t.Fatal(err)
			}
			if suffix == ".blz" {
				data, _ = decompressBlock(data)
			}
			all = append(all, data...)
		}
	}
	return all
}

// TestFileStoreEraseOverwrites checks that an erased payload is gone from
// the disk whether it sits in the active block, a sealed block or a
// compressed block, and that a restart keeps it erased.
func TestFileStoreEraseOverwrites(t *testing.T) {
	for _, comp := range []string{"none", "s2"} {
		h := newMemHarness(t, FileStoreConfig{BlockSize: 1024, Compression: comp}, StoreLimits{})
		secret := func(i int) []byte { return []byte(fmt.Sprintf("SECRET-%03d-%s", i, strings.Repeat("q", 20))) }
		for i := 1; i <= 60; i++ {
			h.fs.StoreMsg("s", []byte("NATS/1.0\r\nH: "+string(secret(i))+"\r\n\r\n"), secret(i), int64(i))
		}
		h.fs.Sync() // seals compress now
		victims := []uint64{2, 30, 59, 60}
		for _, seq := range victims {
			if ok, err := h.fs.EraseMsg(seq); !ok || err != nil {
				t.Fatalf("erase %d: %v %v", seq, ok, err)
			}
		}
		h.fs.Sync()
		disk := diskBytes(t, h)
		for _, seq := range victims {
			if bytes.Contains(disk, secret(int(seq))) {
				t.Fatalf("%s: payload of erased %d still on disk", comp, seq)
			}
		}
		if !bytes.Contains(disk, secret(31)) {
			t.Fatalf("%s: kept payload not found (test broken)", comp)
		}
		for _, withCk := range []bool{true, false} {
			h.fs.Stop()
			if !withCk {
				h.fsys.Remove(h.dir + "/" + fsCheckpointFile)
			}
			h.open()
			st := h.fs.State()
			if st.Msgs != 56 || st.Lost != nil {
				t.Fatalf("%s ckpt=%v: after restart %+v", comp, withCk, st)
			}
			for _, seq := range victims {
				if _, err := h.fs.LoadMsg(seq, nil); err != ErrStoreMsgNotFound {
					t.Fatalf("erased %d loads after restart: %v", seq, err)
				}
			}
			checkSelfConsistent(t, h.fs, comp)
		}
		h.fs.Stop()
	}
}

// TestFileStoreCleanRestartReadsNoSealedBlock makes every sealed block
// unreadable: a restart after a clean Stop must not need them, and they
// are read once a message in them is loaded.
func TestFileStoreCleanRestartReadsNoSealedBlock(t *testing.T) {
	for _, comp := range []string{"none", "s2"} {
		h := newMemHarness(t, FileStoreConfig{BlockSize: 4096, Compression: comp}, StoreLimits{})
		for i := 1; i <= 2000; i++ {
			h.fs.StoreMsg(fmt.Sprintf("r.%d", i%50), nil, []byte(fmt.Sprintf("msg-%d", i)), int64(i))
		}
		h.fs.RemoveMsg(10)
		h.fs.PurgeEx("r.7", 0, 2)
		before := h.fs.State()
		subjects := h.fs.SubjectsState(">")
		h.fs.Stop()
		blocks := append(h.files(".blk"), h.files(".blz")...)
		sort.Slice(blocks, func(i, j int) bool { return blocks[i][:len(blocks[i])-4] < blocks[j][:len(blocks[j])-4] })
		if len(blocks) < 10 {
			t.Fatalf("only %d blocks", len(blocks))
		}
		sealed := map[string]bool{}
		for _, name := range blocks[:len(blocks)-1] {
			sealed[name] = true
			sealed[strings.TrimSuffix(strings.TrimSuffix(name, ".blk"), ".blz")+".idx"] = true
		}
		reads := 0
		h.mem.InjectError(func(op, name string) error {
			if op == "open" && sealed[name] {
				reads++
				return errors.New("sealed block read during open")
			}
			return nil
		})
		h.open()
		h.mem.InjectError(nil)
		if reads != 0 {
			t.Fatalf("%s: open read %d sealed block or index files", comp, reads)
		}
		var st StreamState
		h.fs.FastState(&st)
		if st.Msgs != before.Msgs || st.LastSeq != before.LastSeq || st.NumDeleted != before.NumDeleted {
			t.Fatalf("%s: %+v want %+v", comp, st, before)
		}
		if got := h.fs.SubjectsState(">"); len(got) != len(subjects) || got["r.7"] != subjects["r.7"] {
			t.Fatalf("%s: subjects differ", comp)
		}
		if sm, err := h.fs.LoadMsg(11, nil); err != nil || string(sm.Msg) != "msg-11" {
			t.Fatalf("%s: load 11: %v %v", comp, sm, err)
		}
		checkSelfConsistent(t, h.fs, comp)
		h.fs.Stop()
	}
}

// TestFileStoreCompaction runs a key-value workload (one message kept per
// subject): compaction must keep the disk bounded and never change what
// the store holds, across restarts with and without the checkpoint.
func TestFileStoreCompaction(t *testing.T) {
	for _, comp := range []string{"none", "s2"} {
		lim := StoreLimits{MaxMsgsPerSubject: 1}
		h := newMemHarness(t, FileStoreConfig{BlockSize: 2048, Compression: comp}, lim)
		model := newMemStore(lim)
		payload := []byte(strings.Repeat("v", 100))
		maxDisk := 0
		for i := 0; i < 6000; i++ {
			subj := fmt.Sprintf("kv.%d", i%17)
			if i%50 == 0 {
				subj = fmt.Sprintf("cold.%d", i) // never updated: keeps old blocks partly live
			}
			h.fs.StoreMsg(subj, nil, payload, int64(i))
			model.StoreMsg(subj, nil, payload, int64(i))
			if i%97 == 0 {
				h.fs.Sync()
			}
			if i%1000 == 999 {
				maxDisk = max(maxDisk, len(diskBytes(t, h)))
				compareStores(t, h.fs, model, fmt.Sprintf("%s step %d", comp, i))
			}
		}
		h.fs.Sync()
		t.Logf("%s: %d blocks, %d bytes on disk, at most %d", comp, len(h.fs.blocks), len(diskBytes(t, h)), maxDisk)
		if disk := len(diskBytes(t, h)); disk > 40*2048 || maxDisk > 60*2048 {
			t.Fatalf("%s: disk not reclaimed: %d bytes now, %d at most (%d blocks)", comp, disk, maxDisk, len(h.fs.blocks))
		}
		for _, withCk := range []bool{true, false} {
			h.fs.Stop()
			if !withCk {
				h.fsys.Remove(h.dir + "/" + fsCheckpointFile)
			}
			h.open()
			compareStores(t, h.fs, model, fmt.Sprintf("%s restart ckpt=%v", comp, withCk))
		}
		if logs := h.logs.take(); hasCorruption(logs) {
			t.Fatalf("%s: %v", comp, logs)
		}
		h.fs.Stop()
	}
}

// TestFileStoreConcurrent runs writers, readers, removers and syncs at the
// same time (for the race detector), then checks the store after a restart.
func TestFileStoreConcurrent(t *testing.T) {
	h := newOSHarness(t, FileStoreConfig{BlockSize: 8192, Compression: "s2"}, StoreLimits{MaxMsgsPerSubject: 50})
	fs := h.fs
	var wg sync.WaitGroup
	stop := make(chan struct{})
	run := func(f func(i int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 4000; i++ {
				select {
				case <-stop:
					return
				default:
					f(i)
				}
			}
		}()
	}
	for w := 0; w < 2; w++ {
		run(func(i int) { fs.StoreMsg(fmt.Sprintf("c.%d.%d", w, i%20), nil, []byte("payload"), int64(i)) })
	}
	run(func(i int) {
		var st StreamState
		fs.FastState(&st)
		if st.LastSeq > 0 {
			fs.LoadMsg(uint64(i)%st.LastSeq+1, nil)
			fs.LoadLastMsg("c.0.*", nil)
			fs.LoadNextMsg("c.1.3", uint64(i)%st.LastSeq, nil)
		}
	})
	run(func(i int) {
		if i%3 == 0 {
			fs.RemoveMsg(uint64(i))
		}
		fs.SubjectsState("c.>")
	})
	run(func(i int) { fs.Sync() })
	for i := 0; i < 100 && !t.Failed(); i++ {
		fs.FilteredState(uint64(i), "c.*.1")
		if i%50 == 0 {
			fs.EraseMsg(uint64(i * 3))
		}
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	before := checkSelfConsistent(t, fs, "before restart")
	h.restart()
	after := checkSelfConsistent(t, h.fs, "after restart")
	if len(before.msgs) != len(after.msgs) || before.last != after.last {
		t.Fatalf("restart changed the store: %d/%d msgs, last %d/%d", len(before.msgs), len(after.msgs), before.last, after.last)
	}
	h.fs.Stop()
}

// TestFileStoreCrashReplaysOnlyNewBlocks crashes a store whose last
// checkpoint is older than its last blocks: recovery must read the
// checkpoint's active block and the newer ones, never the older blocks'
// data (their index files give the subjects of replayed tombstones).
func TestFileStoreCrashReplaysOnlyNewBlocks(t *testing.T) {
	h := newMemHarness(t, FileStoreConfig{BlockSize: 2048}, StoreLimits{})
	for i := 1; i <= 300; i++ {
		h.fs.StoreMsg(fmt.Sprintf("o.%d", i%7), nil, []byte(fmt.Sprintf("old-%d", i)), int64(i))
	}
	h.fs.Sync() // writes a checkpoint
	ck := h.fs.readCheckpoint()
	// Checkpoints now fail: the next blocks are only in the log.
	h.mem.InjectError(func(op, name string) error {
		if op == "rename" && strings.HasSuffix(name, fsCheckpointFile+".tmp") {
			return errors.New("no checkpoint")
		}
		return nil
	})
	for i := 301; i <= 500; i++ {
		h.fs.StoreMsg(fmt.Sprintf("o.%d", i%7), nil, []byte(fmt.Sprintf("new-%d", i)), int64(i))
		if i%40 == 0 {
			h.fs.RemoveMsg(uint64(i - 250))
		}
	}
	h.fs.PurgeEx("o.3", 120, 0)
	if err := h.fs.Sync(); err != nil {
		t.Fatal(err)
	}
	want := imageOf(t, h.fs)
	var opened []string
	h.mem.InjectError(func(op, name string) error {
		if op == "open" && (strings.HasSuffix(name, ".blk") || strings.HasSuffix(name, ".idx")) {
			opened = append(opened, name)
		}
		return nil
	})
	h.crash(nil)
	h.mem.InjectError(nil)
	for _, name := range opened {
		var index uint32
		fmt.Sscanf(name[len(h.dir)+1:], "%d", &index)
		// Older blocks' index files may be read (a replayed tombstone
		// needs its message's subject), their data never.
		if index < ck.active && !strings.HasSuffix(name, ".idx") {
			t.Fatalf("recovery opened %s, older than the checkpoint's active block %d", name, ck.active)
		}
	}
	if got := checkSelfConsistent(t, h.fs, "after crash"); !reflect.DeepEqual(got, want) {
		t.Fatalf("recovered %d msgs (last %d), want %d (last %d)", len(got.msgs), got.last, len(want.msgs), want.last)
	}
	h.fs.Stop()
}

// A new store's first sync writes no checkpoint (it would spare the next
// open nothing: thousands of new streams paid one each); what was synced
// survives a crash, and a stop writes the checkpoint.
func TestFileStoreNewStoreFirstSyncNoCheckpoint(t *testing.T) {
	h := newMemHarness(t, FileStoreConfig{}, StoreLimits{})
	for i := 1; i <= 3; i++ {
		h.fs.StoreMsg("n", nil, []byte(fmt.Sprint(i)), int64(i))
	}
	if err := h.fs.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := h.files(fsCheckpointFile); len(got) != 0 {
		t.Fatalf("the first sync of a new store wrote %v", got)
	}
	want := imageOf(t, h.fs)
	h.crash(nil)
	if got := checkSelfConsistent(t, h.fs, "after crash"); !reflect.DeepEqual(got, want) {
		t.Fatalf("recovered %d msgs (last %d), want %d (last %d)", len(got.msgs), got.last, len(want.msgs), want.last)
	}
	h.restart()
	if got := h.files(fsCheckpointFile); len(got) != 1 {
		t.Fatalf("no checkpoint after a stop: %v", got)
	}
	if got := checkSelfConsistent(t, h.fs, "after restart"); !reflect.DeepEqual(got, want) {
		t.Fatalf("restarted with %d msgs, want %d", len(got.msgs), len(want.msgs))
	}
	h.fs.Stop()
}

// An active block holding one small message keeps a small cache: a 4 KiB
// floor cost 40 MB a server at 10,000 idle streams.
func TestFileStoreSmallActiveCache(t *testing.T) {
	h := newMemHarness(t, FileStoreConfig{}, StoreLimits{})
	h.fs.StoreMsg("s", nil, []byte("x"), 1)
	h.fs.mu.Lock()
	c := h.fs.active().cache
	h.fs.mu.Unlock()
	if c == nil {
		t.Fatal("the active block has no cache")
	}
	if cap(c.data) > 512 {
		t.Fatalf("one small message holds a cache of %d bytes", cap(c.data))
	}
	for i := 2; i <= 200; i++ { // growing still works
		h.fs.StoreMsg("s", nil, []byte(fmt.Sprint(i)), int64(i))
	}
	if st := h.fs.State(); st.Msgs != 200 {
		t.Fatalf("%d msgs", st.Msgs)
	}
	h.restart()
	if st := h.fs.State(); st.Msgs != 200 {
		t.Fatalf("%d msgs after a restart", st.Msgs)
	}
	h.fs.Stop()
}
