package server

import (
	"errors"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats-server/v2/internal/vfs"
	"github.com/nats-io/nats-server/v2/internal/wal"
)

// The repair marker keeps the floor across restarts; anything but a
// well-formed one reads as unknown (the replica abstains: safe).
func TestRepairMarkerFloor(t *testing.T) {
	rs := repairState{floor: raft.LogPosition{Term: 7, Index: 1234}, term: 9}
	if got := decodeRepair(rs.encode()); got != rs {
		t.Fatalf("round trip: %+v", got)
	}
	for _, b := range []string{"1", "", "floor 7 3", "floor x 3 7\n", "floor 7 0 7\n", "floor -1 3 7\n",
		"floor 7 3 7\nmore", "floor 7 3 6\n"} {
		if got := decodeRepair([]byte(b)); got != (repairState{}) {
			t.Errorf("%q read as %+v", b, got)
		}
	}
	if got := decodeRepair(repairState{}.encode()); got != (repairState{}) {
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

// A crash after the discard removed the old log but before the new one
// stored its term and vote leaves a log with term 0 beside a marker with
// a floor: the start raises it above the marker's term (the lost vote may
// have been cast in it), and leaves a log at or above it as it is.
func TestRepairRaisesLostTerm(t *testing.T) {
	fs := vfs.NewMem()
	dir := "/g/wal"
	if err := raiseTerm(fs, dir, 6, t.Logf); err != nil {
		t.Fatal(err)
	}
	hs := readHardState(t, fs, dir)
	if hs.Term != 7 || hs.Vote != 0 {
		t.Fatalf("raised to %+v, want term 7 and no vote", hs)
	}
	w, err := wal.Open(fs, dir, wal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(w.SetHardState(wal.HardState{Term: 9, Vote: 3}), w.Sync(), w.Close()); err != nil {
		t.Fatal(err)
	}
	if err := raiseTerm(fs, dir, 6, t.Logf); err != nil {
		t.Fatal(err)
	}
	if hs := readHardState(t, fs, dir); hs.Term != 9 || hs.Vote != 3 {
		t.Fatalf("a log above the marker's term changed to %+v", hs)
	}
}

func readHardState(t *testing.T, fs vfs.FS, dir string) wal.HardState {
	t.Helper()
	w, err := wal.Open(fs, dir, wal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	return w.HardState()
}
