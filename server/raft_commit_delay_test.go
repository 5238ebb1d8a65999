package server

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A leader holds back a commit index no append carries (DeferCommit) for
// raftCommitDelay, not until its next tick: after one publish and nothing
// more, the followers of an R3 stream apply it well within a tick. The
// ticks are slowed to 200 ms so a tick cannot pass for the timer: without
// it, the followers learn the commit only at the leader's next tick (each
// round starts just after the one before ended, on a tick, so it waits
// most of one).
func TestJetStreamClusterDeferredCommitSentByTimer(t *testing.T) {
	setForTest(t, &raftTick, 200*time.Millisecond)
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "DC", Subjects: []string{"dc"}, Replicas: 3})
	c.waitAllApplied(t, "DC", 3, 0, 10*time.Second)
	bound := raftTick / 2
	const rounds = 12
	var late []time.Duration
	for seq := uint64(1); seq <= rounds; seq++ {
		if _, err := js.Publish(ctx(t), "dc", []byte("x")); err != nil {
			t.Fatal(err)
		}
		acked := time.Now()
		for !allStored(c, "DC", seq) {
			if time.Since(acked) > 5*raftTick {
				t.Fatalf("followers did not apply message %d within %v", seq, 5*raftTick)
			}
			time.Sleep(100 * time.Microsecond) // polling the condition
		}
		if took := time.Since(acked); took > bound {
			late = append(late, took)
		}
	}
	// A few rounds may be late on a loaded machine (a race-built suite on
	// two cores); without the timer every round is: each waits most of a
	// tick, 175-200 ms, measured with the timer disarmed.
	if len(late) > 3 {
		t.Fatalf("followers applied %d of %d publishes more than %v after the ack: %v", len(late), rounds, bound, late)
	}
}

// allStored reports whether every replica of the stream stored seq.
func allStored(c *jsTestCluster, name string, seq uint64) bool {
	reps := c.replicas(name)
	for _, m := range reps {
		var ss StreamState
		m.st().FastState(&ss)
		if ss.LastSeq < seq {
			return false
		}
	}
	return len(reps) == 3
}
