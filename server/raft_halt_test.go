package server

import (
	"errors"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// A halt asked of a hosted group (the simulator drives it without run)
// comes out of runControls as its error, after the controls queued before
// it, and nothing panics; a second request while one waits is dropped
// without blocking the asker. (Before, the halt after a failed sync was a
// control call that panicked, and runControls recovers nothing.)
func TestRaftHaltHostedGroup(t *testing.T) {
	g := &raftGroup{drv: &raft.Driver{}, ctrl: make(chan func(*raft.Node), 4), halts: make(chan groupHalt, 1)}
	ran := 0
	g.ctrl <- func(*raft.Node) { ran++ }
	want := errors.New("stream store failed: EIO")
	g.haltWith(want, "halting")
	g.haltWith(errors.New("another"), "again") // must not block
	if err := g.runControls(); !errors.Is(err, want) {
		t.Fatalf("runControls returned %v, want %v", err, want)
	}
	if ran != 1 {
		t.Fatalf("%d controls ran before the halt, want 1", ran)
	}
	if err := g.runControls(); err != nil {
		t.Fatalf("runControls returned %v with no halt waiting", err)
	}
}
