package store

import (
	"fmt"
	"sort"
	"testing"
)

// TestFileStoreRemoveFindsDamage: removing a subject's first message
// searches the following blocks for its next one; a damaged block found
// there loses a message of the same subject meanwhile. The per-subject
// state (now values in a table, not shared pointers) must count the loss
// as well as the removal.
func TestFileStoreRemoveFindsDamage(t *testing.T) {
	h := newMemHarness(t, FileStoreConfig{BlockSize: 64}, StoreLimits{})
	for i := range 4 {
		if _, err := h.fs.StoreMsg("a", nil, []byte(fmt.Sprintf("payload-%d-0123456789", i)), int64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	blocks := h.files(".blk")
	if len(blocks) < 4 {
		t.Fatalf("want a block per message, have %v", blocks)
	}
	sort.Strings(blocks)
	h.restart()
	h.fs.Stop()
	// Block 2 (seq 2): its index is gone and its one record is damaged.
	idx := blocks[1][:len(blocks[1])-len(".blk")] + ".idx"
	if err := h.mem.Remove(idx); err != nil {
		t.Fatalf("remove %s: %v", idx, err)
	}
	h.mem.FlipBit(blocks[1], 60, 3)
	h.open()
	if ok, err := h.fs.RemoveMsg(1); !ok || err != nil {
		t.Fatalf("remove 1: %v %v", ok, err)
	}
	st := h.fs.FilteredState(0, "a")
	if want := (SimpleState{Msgs: 2, First: 3, Last: 4}); st != want {
		t.Fatalf("state of a: %+v, want %+v (lost: %+v)", st, want, h.fs.State().Lost)
	}
	if ss := h.fs.SubjectsState("a")["a"]; ss != st {
		t.Fatalf("SubjectsState %+v, FilteredState %+v", ss, st)
	}
	checkSelfConsistent(t, h.fs, "after the removal")
}
