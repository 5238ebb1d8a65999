package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// While every raft group sleeps, the raft clock wakes only to ping the
// routes (every raftLivePingEvery), not every raftTick; a publish wakes
// its group, whose ticks resume at once (it commits, then quiesces again).
func TestRaftClockIdlesWhileGroupsSleep(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	for i := range 3 {
		createStream(t, js, jetstream.StreamConfig{Name: fmt.Sprintf("C%d", i), Subjects: []string{fmt.Sprintf("c.%d", i)}, Replicas: 3})
	}
	waitFor(t, 15*time.Second, "every group asleep", func() bool { return c.groupsAwake() == "" })
	ticks := func() (n uint64) {
		for _, s := range c.servers {
			n += s.raftClock.ticks.Load()
		}
		return n
	}
	// Three clocks ticking every raftTick would make 3*el/raftTick; a
	// window in which a group woke (a late PONG on a loaded machine) is
	// tried again, up to three windows.
	var got, limit uint64
	for range 3 {
		before, t0 := ticks(), time.Now()
		time.Sleep(time.Second) // an observation window: the count is the result
		el := time.Since(t0)
		got, limit = ticks()-before, uint64(3*(el/raftLivePingEvery)+6)
		if got <= limit {
			break
		}
	}
	if got > limit {
		t.Fatalf("the raft clocks ticked %d times in a second while every group slept (limit %d)", got, limit)
	}
	t1 := time.Now()
	if _, err := js.Publish(ctx(t), "c.1", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t1); d > 2*time.Second {
		t.Fatalf("a publish into a sleeping stream took %v", d)
	}
	waitFor(t, 15*time.Second, "every group asleep again", func() bool { return c.groupsAwake() == "" })
}
