package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// leaderOf names the running server whose replica of stream leads it
// (its group's own view), or "".
func (c *jsTestCluster) leaderOf(stream string) string {
	for _, s := range c.servers {
		if !s.Running() {
			continue
		}
		if mset := c.replicaOn(s, stream); mset != nil {
			if g := mset.groupNow(); g != nil && g.leads.Load() {
				return s.Name()
			}
		}
	}
	return ""
}

// When a server dies while its streams sleep, the two survivors split its
// leaderships evenly. Every group on a server used to draw its election
// timeouts from the same sequence (seeded with the server's id alone), so
// in every group the same survivor timed out first and won: at 3,000
// streams n1 took 917 of the dead n2's 1,000. The balancer is held off
// here: the split is the elections' own. They are also quick: the groups
// sleep, so the survivors take turns and need no election timeout.
func TestJetStreamClusterDeadLeadersSplitEvenly(t *testing.T) {
	setForTest(t, &leaderBalanceEvery, time.Hour)
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	const n = 120
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("SPR%d", i)
		createStream(t, js, jetstream.StreamConfig{Name: names[i], Subjects: []string{names[i]}, Replicas: 3})
	}
	waitFor(t, 60*time.Second, "every group asleep", func() bool { return c.groupsAwake() == "" })
	victim := c.servers[2].Name()
	var led []string
	for _, name := range names {
		if c.leaderOf(name) == victim {
			led = append(led, name)
		}
	}
	if len(led) < n/6 {
		t.Fatalf("the victim leads only %d of %d streams: nothing to split", len(led), n)
	}
	c.servers[2].Shutdown()
	start := time.Now()
	got := map[string]int{}
	waitFor(t, 30*time.Second, "every stream the victim led led again", func() bool {
		clear(got)
		for _, name := range led {
			l := c.leaderOf(name)
			if l == "" {
				return false
			}
			got[l]++
		}
		return true
	})
	took := time.Since(start)
	t.Logf("%d leaderships of %s split %v, all led again %v after its shutdown", len(led), victim, got, took)
	// The survivors take turns (internal/raft/ranked.go): the first in
	// each group campaigns at its next tick. With randomized timeouts
	// nobody campaigned before an election timeout (10 ticks) had passed.
	if took >= 10*raftTick {
		t.Fatalf("the groups %s led were led again %v after its shutdown, not within an election timeout (%v)",
			victim, took, 10*raftTick)
	}
	// Independent draws: each survivor wins each group with probability
	// about 1/2; 25-75% leaves more than 3.5 standard deviations at 40.
	for _, s := range c.servers[:2] {
		if k := got[s.Name()]; 4*k < len(led) || 4*k > 3*len(led) {
			t.Fatalf("%s took %d of the %d leaderships of %s (%v): not even", s.Name(), k, len(led), victim, got)
		}
	}
}
