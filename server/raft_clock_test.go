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

// A group asking for the next tick takes no lock: with thousands of
// groups, each asking after every tick, a restart had them queue on the
// clock's mutex. next must return while another goroutine holds it.
func TestRaftClockNextTakesNoLock(t *testing.T) {
	var c raftClock
	c.kick = make(chan struct{}, 1)
	c.mu.Lock()
	got := make(chan (<-chan struct{}), 1)
	go func() { got <- c.next() }()
	var ch <-chan struct{}
	select {
	case ch = <-got:
	case <-time.After(10 * time.Second):
		c.mu.Unlock()
		t.Fatal("next waited for the clock's lock")
	}
	c.mu.Unlock()
	if !c.tick() {
		t.Fatal("a tick a group waited for was not busy")
	}
	select {
	case <-ch:
	default:
		t.Fatal("the tick did not close the channel next returned")
	}
	// Nobody waited for this tick: the clock idles; the next ask kicks it
	// once, and the tick after counts as busy.
	if c.tick() {
		t.Fatal("a tick nobody waited for was busy")
	}
	c.next()
	c.next()
	if len(c.kick) != 1 {
		t.Fatalf("%d kicks pending after two asks of an idle clock", len(c.kick))
	}
	if !c.tick() {
		t.Fatal("the tick after a kick was not busy")
	}
}

// Groups asking while the clock ticks are never left waiting out an idle
// period: after each tick that reports idle, a later ask kicks, so every
// ask made is covered by a busy tick or a kick.
func TestRaftClockNoLostWaiter(t *testing.T) {
	for round := 0; round < 2000; round++ {
		var c raftClock
		c.kick = make(chan struct{}, 1)
		c.tick() // idle: nobody asked
		done := make(chan struct{})
		go func() { c.next(); close(done) }()
		busy := c.tick()
		<-done
		// The ask is either counted by that tick, or pending for the next
		// one, or it kicked the idle clock.
		if !busy && !c.waited.Load() && len(c.kick) == 0 {
			t.Fatalf("round %d: an ask was lost (idle %v)", round, c.idle.Load())
		}
		if !busy && c.idle.Load() && len(c.kick) == 0 {
			t.Fatalf("round %d: the clock idles with a waiter and no kick", round)
		}
	}
}
