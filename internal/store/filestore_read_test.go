package store

import (
	"fmt"
	"testing"
)

// A consumer reading forward through a sealed block finds each message
// and then loads it again (LoadNextMsg, LoadMsg of the same sequence):
// the block must still be loaded whole after a short run of single-record
// reads, not read one record per system call to its end.
func TestFileStoreForwardRunWithRereadsLoadsBlock(t *testing.T) {
	h := newMemHarness(t, FileStoreConfig{BlockSize: 4096}, StoreLimits{})
	for i := 1; i <= 500; i++ {
		h.fs.StoreMsg("r", nil, []byte(fmt.Sprintf("msg-%d", i)), int64(i))
	}
	h.restart() // sealed blocks start without their data in memory
	b := h.fs.blocks[0]
	if len(h.fs.blocks) < 2 || b.cache != nil || b.last-b.first < 2*fsSequentialRun {
		t.Fatalf("want a sealed block of more than %d messages not in memory: %d blocks, first %d..%d",
			2*fsSequentialRun, len(h.fs.blocks), b.first, b.last)
	}
	var sm StoreMsg
	for seq := b.first; seq <= b.first+2*fsSequentialRun; seq++ {
		m, err := h.fs.LoadNextMsg(">", seq, &sm)
		if err != nil || m.Seq != seq {
			t.Fatalf("next from %d: %v %v", seq, m, err)
		}
		if m, err = h.fs.LoadMsg(seq, &sm); err != nil || string(m.Msg) != fmt.Sprintf("msg-%d", seq) {
			t.Fatalf("load %d: %v %v", seq, m, err)
		}
	}
	if b.cache == nil {
		t.Fatalf("after %d forward reads (each twice) the block is still read record by record", 2*fsSequentialRun+1)
	}
}
