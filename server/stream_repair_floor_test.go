package server

import (
	"testing"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// The repair marker keeps the floor across restarts; anything but a
// well-formed one reads as unknown (the replica abstains: safe).
func TestRepairMarkerFloor(t *testing.T) {
	f := raft.LogPosition{Term: 7, Index: 1234}
	if got := decodeFloor(encodeFloor(f)); got != f {
		t.Fatalf("round trip: %+v", got)
	}
	for _, b := range []string{"1", "", "floor 7", "floor x 3\n", "floor 7 0\n", "floor -1 3\n", "floor 7 3\nmore"} {
		if got := decodeFloor([]byte(b)); !got.IsZero() {
			t.Errorf("%q read as floor %+v", b, got)
		}
	}
	if got := decodeFloor(encodeFloor(raft.LogPosition{})); !got.IsZero() {
		t.Fatalf("unknown floor read as %+v", got)
	}
}

// The floor a discard keeps: the discarded log's last entry, at least the
// floor of an unfinished repair, unknown when anything is not known.
func TestDiscardFloor(t *testing.T) {
	hs := raft.HardState{Term: 5}
	a, b := raft.LogPosition{Term: 4, Index: 90}, raft.LogPosition{Term: 5, Index: 3}
	for _, c := range []struct {
		name        string
		repairing   bool
		prior, last raft.LogPosition
		hs          raft.HardState
		want        raft.LogPosition
	}{
		{"first damage", false, raft.LogPosition{}, a, hs, a},
		{"unreadable log", false, raft.LogPosition{}, raft.LogPosition{}, hs, raft.LogPosition{}},
		{"no term kept", false, raft.LogPosition{}, a, raft.HardState{}, raft.LogPosition{}},
		{"again, log past the floor", true, a, b, hs, b},
		{"again, log behind the floor", true, b, a, hs, b},
		{"again after a wipe", true, raft.LogPosition{}, a, hs, raft.LogPosition{}},
	} {
		if got := discardFloor(c.repairing, c.prior, c.last, c.hs); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
