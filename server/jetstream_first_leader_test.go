package server

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The meta leader puts each new stream's first leader on the member that
// is the first leader of the fewest streams: 300 streams over three
// servers give each exactly 100, where the hash alone scatters them.
func TestSpreadFirstLeaderEvens(t *testing.T) {
	jc := &jsCluster{}
	for i := 0; i < 300; i++ {
		sa := &streamAssignment{Account: "A", Config: StreamConfig{Name: fmt.Sprint("s", i)},
			Peers: []string{"a", "b", "c"}, Created: time.Unix(0, int64(i)*7919)}
		placeFirstLeader(sa, firstLeadCounts(jc, sa))
		jc.mu.Lock()
		jc.countPlacedLocked(sa, 1)
		jc.mu.Unlock()
	}
	for _, p := range []string{"a", "b", "c"} {
		if got := jc.firstLeads[p]; got != 100 {
			t.Fatalf("first leaderships %v, want 100 each", jc.firstLeads)
		}
	}
	// Only the order changes: the placement is the same servers.
	sa := &streamAssignment{Account: "A", Config: StreamConfig{Name: "x"}, Peers: []string{"a", "b", "c"}, Created: time.Unix(0, 1)}
	placeFirstLeader(sa, []int{5, 3, 9})
	if sa.firstLeader() != "b" || len(sa.Peers) != 3 || !sameSet(sa.Peers, []string{"a", "b", "c"}) {
		t.Fatalf("peers %v, first leader %q, want b", sa.Peers, sa.firstLeader())
	}
	// A member that is not connected (-1) is never picked, even with
	// the fewest; with none connected the order stays.
	sa.Peers = []string{"a", "b", "c"}
	placeFirstLeader(sa, []int{5, -1, 9})
	if sa.firstLeader() != "a" {
		t.Fatalf("peers %v, first leader %q, want a", sa.Peers, sa.firstLeader())
	}
	sa.Peers = []string{"a", "b", "c"}
	before := sa.firstLeader()
	placeFirstLeader(sa, []int{-1, -1, -1})
	if sa.firstLeader() != before || !slices.Equal(sa.Peers, []string{"a", "b", "c"}) {
		t.Fatalf("peers %v changed with no member connected", sa.Peers)
	}
}

func firstLeadCounts(jc *jsCluster, sa *streamAssignment) []int {
	counts := make([]int, len(sa.Peers))
	for i, p := range sa.Peers {
		counts[i] = jc.firstLeads[p]
	}
	return counts
}

func sameSet(a, b []string) bool {
	m := map[string]int{}
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		m[x]--
	}
	for _, v := range m {
		if v != 0 {
			return false
		}
	}
	return len(a) == len(b)
}

// Streams created one after another on a 3-server cluster have their
// first leaders spread within one of even on every server (each applies
// the same assignments, so each counts the same), so the leader balancer
// has nothing to move: no create costs a leadership transfer and the
// election behind it. Every stream is still led by its first leader.
func TestJetStreamClusterFirstLeadersSpreadOnCreate(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	const n = 30
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("FL%d", i)
		createStream(t, js, jetstream.StreamConfig{Name: name, Subjects: []string{name}, Replicas: 3})
	}
	for _, s := range c.servers {
		jc := s.js.Load().cluster
		waitFor(t, 10*time.Second, "every create applied", func() bool { return jc.streamCount(globalAccountName) == n })
		counts := map[string]int{}
		for _, sa := range jc.assignments(globalAccountName) {
			counts[sa.firstLeader()]++
		}
		for _, p := range c.servers {
			if k := counts[p.Name()]; k != n/3 {
				t.Fatalf("%s: first leaders per server %v, want %d each", s.Name(), counts, n/3)
			}
		}
	}
	jc := c.servers[0].js.Load().cluster
	waitFor(t, 10*time.Second, "every stream led by its first leader", func() bool {
		for _, sa := range jc.assignments(globalAccountName) {
			if jc.streamLeader(globalAccountName, sa.Config.Name) != sa.firstLeader() {
				return false
			}
		}
		return true
	})
}
