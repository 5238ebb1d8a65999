package server

import (
	"fmt"
	"maps"
	"slices"
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
	moves := planLeaderMoves("a", led, leads, share, nil, 32)
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
	moves = planLeaderMoves("a", led, leads, share, nil, 32)
	if len(moves) != 8 || leads["a"] != 50 {
		t.Fatalf("%d moves, a leads %d", len(moves), leads["a"])
	}
	// b (60, above) moves to c (40, below) until both are at their share.
	moves = planLeaderMoves("b", led[:60], leads, share, nil, 32)
	if len(moves) != 10 || leads["b"] != 50 || leads["c"] != 50 {
		t.Fatalf("%d moves from b, counts %v", len(moves), leads)
	}
	// Balanced: nothing moves.
	for _, me := range peers {
		if moves := planLeaderMoves(me, led, leads, share, nil, 32); len(moves) != 0 {
			t.Fatalf("%s moved %d at %v", me, len(moves), leads)
		}
	}
	// A server not live (no share) is never a target.
	leads = map[string]int{"a": 90}
	share = map[string]float64{"a": 45, "b": 45}
	for _, mv := range planLeaderMoves("a", led, leads, share, nil, 100) {
		if mv.to != "b" {
			t.Fatalf("moved to %s, which is not live", mv.to)
		}
	}
	// One stream: moving it would not narrow the spread.
	leads = map[string]int{"a": 1}
	share = map[string]float64{"a": 1.0 / 3, "b": 1.0 / 3, "c": 1.0 / 3}
	if moves := planLeaderMoves("a", led[:1], leads, share, nil, 32); len(moves) != 0 {
		t.Fatalf("a single stream moved: %v", moves)
	}
}

// A round's budget is the server's excess over its share, at least
// leaderBalanceMax and at most leaderBalanceCap; with it, a server back
// among 10,000 streams gets its share within a few rounds (at 32 per
// round it took about 50), each round moving no more than the cap.
func TestLeaderBalanceBudget(t *testing.T) {
	for _, tc := range []struct {
		excess float64
		want   int
	}{{-5, 32}, {0, 32}, {3.2, 32}, {32, 32}, {100.4, 101}, {511, 511}, {512, 512}, {3333.4, 512}, {1e9, 512}} {
		if got := balanceBudget(tc.excess); got != tc.want {
			t.Fatalf("balanceBudget(%v) = %d, want %d", tc.excess, got, tc.want)
		}
	}
	// 10,000 R3 streams: a and b lead 5,000 each, c is back and leads
	// none. Each round a and b plan from the same counts, as each server
	// does from its own leader map.
	peers := []string{"a", "b", "c"}
	const n = 10000
	var ledA, ledB []*streamAssignment
	for i := range n {
		sa := &streamAssignment{Config: StreamConfig{Name: fmt.Sprint(i)}, Peers: peers}
		if i%2 == 0 {
			ledA = append(ledA, sa)
		} else {
			ledB = append(ledB, sa)
		}
	}
	share := map[string]float64{"a": n / 3.0, "b": n / 3.0, "c": n / 3.0}
	leads := map[string]int{"a": n / 2, "b": n / 2, "c": 0}
	rounds := 0
	for ; rounds < 20; rounds++ {
		ma := planLeaderMoves("a", ledA, maps.Clone(leads), share, nil, balanceBudget(float64(leads["a"])-share["a"]))
		mb := planLeaderMoves("b", ledB, maps.Clone(leads), share, nil, balanceBudget(float64(leads["b"])-share["b"]))
		if len(ma)+len(mb) == 0 {
			break
		}
		if len(ma) > leaderBalanceCap || len(mb) > leaderBalanceCap {
			t.Fatalf("round %d moved %d and %d, above the cap %d", rounds, len(ma), len(mb), leaderBalanceCap)
		}
		ledA, ledB = ledA[len(ma):], ledB[len(mb):]
		leads["a"] -= len(ma)
		leads["b"] -= len(mb)
		leads["c"] += len(ma) + len(mb)
	}
	for _, p := range peers {
		if d := float64(leads[p]) - share[p]; d < -2 || d > 2 {
			t.Fatalf("after %d rounds %v: not even", rounds, leads)
		}
	}
	if rounds > 8 {
		t.Fatalf("evening took %d rounds", rounds)
	}
	t.Logf("even after %d rounds: %v", rounds, leads)
}

// A server back from a restart leads nothing at first (its streams
// elected leaders among the others while it was away); it takes over its
// share of leaderships by transfer, and the spread ends within one of
// even.
func TestJetStreamClusterLeadersRebalanceAfterRestart(t *testing.T) {
	c := runJSCluster(t, 3)
	const n = 12
	counts := leaderCountedStreams(t, c, "BAL", n)
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

// The balancer scans every assignment only when its outcome may change: an
// idle cluster runs no round; a stepdown, a new stream and a server going
// away each make every server that sees it run one.
func TestJetStreamClusterBalancerRunsOnChanges(t *testing.T) {
	setForTest(t, &leaderBalanceEvery, 20*time.Millisecond)
	setForTest(t, &leaderBalanceIdle, time.Hour)
	c := runJSCluster(t, 3)
	nc, js := jsClient(t, c.servers[0])
	for i := range 6 {
		name := fmt.Sprintf("QB%d", i)
		createStream(t, js, jetstream.StreamConfig{Name: name, Subjects: []string{name}, Replicas: 3})
	}
	bs := func(s *Server) *balanceState { return &s.js.Load().cluster.balance }
	rounds := func(servers []*Server) []uint64 {
		var out []uint64
		for _, s := range servers {
			out = append(out, bs(s).rounds.Load())
		}
		return out
	}
	// quiet waits until 25 looks pass on every server without a round.
	quiet := func(servers []*Server) []uint64 {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			before, polls := rounds(servers), []uint64{}
			for _, s := range servers {
				polls = append(polls, bs(s).polls.Load())
			}
			waitFor(t, 10*time.Second, "25 balancer looks", func() bool {
				for i, s := range servers {
					if bs(s).polls.Load() < polls[i]+25 {
						return false
					}
				}
				return true
			})
			if after := rounds(servers); slices.Equal(before, after) {
				return after
			}
			if time.Now().After(deadline) {
				t.Fatalf("the balancer still runs rounds in an idle cluster: %v", rounds(servers))
			}
		}
	}
	grew := func(servers []*Server, from []uint64, what string) {
		t.Helper()
		waitFor(t, 10*time.Second, "a balancer round on every server after "+what, func() bool {
			for i, r := range rounds(servers) {
				if r <= from[i] {
					return false
				}
			}
			return true
		})
	}
	base := quiet(c.servers)
	stepdownStream(t, nc, "QB0")
	grew(c.servers, base, "a stepdown")
	base = quiet(c.servers)
	createStream(t, js, jetstream.StreamConfig{Name: "QB6", Subjects: []string{"QB6"}, Replicas: 3})
	grew(c.servers, base, "a new stream")
	base = quiet(c.servers)
	c.servers[2].Shutdown()
	grew(c.servers[:2], base[:2], "a server going away")
}

// leaderCountedStreams creates n R3 streams named prefix0, prefix1, ...
// and returns a count of their leaders by server name ("" for none), as
// server 0's leader map has them.
func leaderCountedStreams(t *testing.T, c *jsTestCluster, prefix string, n int) func() map[string]int {
	t.Helper()
	_, js := jsClient(t, c.servers[0])
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s%d", prefix, i)
		createStream(t, js, jetstream.StreamConfig{Name: names[i], Subjects: []string{names[i]}, Replicas: 3})
	}
	jc := c.servers[0].js.Load().cluster
	return func() map[string]int {
		m := map[string]int{}
		for _, name := range names {
			m[jc.streamLeader(globalAccountName, name)]++
		}
		return m
	}
}
