package store

import (
	"fmt"
	"testing"
)

// A block file its checkpoint lists that is missing at open is damage the
// store reports (CheckpointMismatched), also when what is left holds as
// many messages as before: the missing block's tombstones deleted others,
// which come back. An intact store reports none.
func TestFileStoreCheckpointMismatched(t *testing.T) {
	h := newMemHarness(t, FileStoreConfig{BlockSize: 2048}, StoreLimits{})
	for i := 1; i <= 200; i++ {
		h.fs.StoreMsg(fmt.Sprintf("c.%d", i%5), nil, []byte(fmt.Sprintf("m-%d", i)), int64(i))
	}
	h.restart() // a stop writes the checkpoint
	if h.fs.CheckpointMismatched() {
		t.Fatal("an intact store reports a checkpoint mismatch")
	}
	blocks := h.files(".blk")
	if len(blocks) < 3 {
		t.Fatalf("%d blocks, want sealed ones", len(blocks))
	}
	if err := h.fsys.Remove(blocks[1]); err != nil {
		t.Fatal(err)
	}
	h.restart()
	if !h.fs.CheckpointMismatched() {
		t.Fatalf("%s removed: the store reports no checkpoint mismatch", blocks[1])
	}
	h.fs.Stop()
}
