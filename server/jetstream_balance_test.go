package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The planner moves leaderships only from a server above its share to a
// member below its share and at least two behind, never more than max per
// round, and stops once the leader is at its share.
func TestPlanLeaderMoves(t *testing.T) {
	peers := []string{"a", "b", "c"}
	var led []*streamAssignment
	for i := range 90 {
		led = append(led, &streamAssignment{Config: StreamConfig{Name: fmt.Sprint(i)}, Peers: peers})
	}
	share := map[string]float64{"a": 50, "b": 50, "c": 50}
	// a leads 90, b 60, c 0 (it was away).
	leads := map[string]int{"a": 90, "b": 60}
	moves := planLeaderMoves("a", led, leads, share, 32)
	if len(moves) != 32 {
		t.Fatalf("%d moves, want the round's bound 32", len(moves))
	}
	for _, mv := range moves {
		if mv.to != "c" {
			t.Fatalf("moved to %s, want c (b is above its share)", mv.to)
		}
	}
	if leads["a"] != 58 || leads["c"] != 32 {
		t.Fatalf("counts after planning %v", leads)
	}
	// Next round: a is 8 above its share; it moves 8.
	moves = planLeaderMoves("a", led, leads, share, 32)
	if len(moves) != 8 || leads["a"] != 50 {
		t.Fatalf("%d moves, a leads %d", len(moves), leads["a"])
	}
	// b (60, above) moves to c (40, below) until both are at their share.
	moves = planLeaderMoves("b", led[:60], leads, share, 32)
	if len(moves) != 10 || leads["b"] != 50 || leads["c"] != 50 {
		t.Fatalf("%d moves from b, counts %v", len(moves), leads)
	}
	// Balanced: nothing moves.
	for _, me := range peers {
		if moves := planLeaderMoves(me, led, leads, share, 32); len(moves) != 0 {
			t.Fatalf("%s moved %d at %v", me, len(moves), leads)
		}
	}
	// A server not live (no share) is never a target.
	leads = map[string]int{"a": 90}
	share = map[string]float64{"a": 45, "b": 45}
	for _, mv := range planLeaderMoves("a", led, leads, share, 100) {
		if mv.to != "b" {
			t.Fatalf("moved to %s, which is not live", mv.to)
		}
	}
	// One stream: moving it would not narrow the spread.
	leads = map[string]int{"a": 1}
	share = map[string]float64{"a": 1.0 / 3, "b": 1.0 / 3, "c": 1.0 / 3}
	if moves := planLeaderMoves("a", led[:1], leads, share, 32); len(moves) != 0 {
		t.Fatalf("a single stream moved: %v", moves)
	}
}

// A server back from a restart leads nothing at first (its streams
// elected leaders among the others while it was away); it takes over its
// share of leaderships by transfer, and the spread ends within one of
// even.
func TestJetStreamClusterLeadersRebalanceAfterRestart(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	const n = 12
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("BAL%d", i)
		createStream(t, js, jetstream.StreamConfig{Name: names[i], Subjects: []string{names[i]}, Replicas: 3})
	}
	jc := c.servers[0].js.Load().cluster
	counts := func() map[string]int {
		m := map[string]int{}
		for _, name := range names {
			m[jc.streamLeader(globalAccountName, name)]++
		}
		return m
	}
	c.servers[2].Shutdown()
	gone := c.servers[2].Name()
	waitFor(t, 30*time.Second, "every stream led by the two others", func() bool {
		m := counts()
		return m[""] == 0 && m[gone] == 0
	})
	c.servers[2] = runServer(t, c.opts[2])
	waitFor(t, 60*time.Second, "leaderships spread within one of even", func() bool {
		m := counts()
		for _, s := range c.servers {
			if k := m[s.Name()]; k < n/3-1 || k > n/3+1 {
				return false
			}
		}
		return true
	})
}
