package server

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// A server back from a restart that is still catching up gets no
// leadership by transfer: the others' balancers hold toward it, counted
// in transfers, for as long as it says it catches up, however many rounds
// they run, and resume once it says it is done. Without the hold the
// survivors handed it its share in their first rounds after its route
// came back.
func TestJetStreamClusterBalancerHoldsForCatchingUp(t *testing.T) {
	pin := pinCatchingUp(t)
	setForTest(t, &restartHoldMax, time.Hour)
	c := runJSCluster(t, 3)
	const n = 12
	counts := leaderCountedStreams(t, c, "HOLD", n)
	gone := c.servers[2].Name()
	pin(gone)
	c.servers[2].Shutdown()
	waitFor(t, 30*time.Second, "every stream led by the two others", func() bool {
		m := counts()
		return m[""] == 0 && m[gone] == 0
	})
	bal := func(i int) *balanceState { return &c.servers[i].js.Load().cluster.balance }
	moved := []uint64{bal(0).transfers.Load(), bal(1).transfers.Load()}
	c.servers[2] = runServer(t, c.opts[2])
	// The survivors see it catching up, and its replicas are all current
	// (the moment transfers toward it became possible without the hold).
	waitFor(t, 30*time.Second, "the survivors hold for the restarted server, its replicas current", func() bool {
		for i := range 2 {
			if !slices.Contains(c.servers[i].js.Load().cluster.heldServers(), gone) {
				return false
			}
		}
		p := &c.servers[2].js.Load().cluster.restart
		return p.started.Load() == n && p.current.Load() == n
	})
	// Many balancer looks on every server while it is held.
	polls := []uint64{bal(0).polls.Load(), bal(1).polls.Load(), bal(2).polls.Load()}
	waitFor(t, 30*time.Second, "5 balancer looks on every server", func() bool {
		for i := range 3 {
			if bal(i).polls.Load() < polls[i]+5 {
				return false
			}
		}
		return true
	})
	for i := range 2 {
		if d := bal(i).transfers.Load() - moved[i]; d != 0 {
			t.Fatalf("server %d started %d transfers while the restarted server caught up", i, d)
		}
	}
	if m := counts(); m[gone] != 0 {
		t.Fatalf("the restarted server leads %d streams while it catches up: %v", m[gone], m)
	}
	pin("") // caught up: it says so, the balancers resume
	waitFor(t, 60*time.Second, "leaderships spread within one of even", func() bool {
		m := counts()
		for _, s := range c.servers {
			if k := m[s.Name()]; k < n/3-1 || k > n/3+1 {
				return false
			}
		}
		return true
	})
	if bal(0).transfers.Load()+bal(1).transfers.Load() == moved[0]+moved[1] {
		t.Fatal("evened without a counted transfer")
	}
}

// A server catching up moves none of its leaderships away, counted in
// transfers, while another server's balancer hands the returning server
// its share; once it is done it moves its excess too.
func TestJetStreamClusterBalancerHoldsAwayFromCatchingUp(t *testing.T) {
	pin := pinCatchingUp(t)
	c := runJSCluster(t, 3)
	const n = 12
	counts := leaderCountedStreams(t, c, "AWAY", n)
	gone := c.servers[2].Name()
	c.servers[2].Shutdown()
	waitFor(t, 30*time.Second, "every stream led by the two others", func() bool {
		m := counts()
		return m[""] == 0 && m[gone] == 0
	})
	pin(c.servers[0].Name()) // server 0 catches up from now on
	bal := func(i int) *balanceState { return &c.servers[i].js.Load().cluster.balance }
	moved0 := bal(0).transfers.Load()
	c.servers[2] = runServer(t, c.opts[2])
	waitFor(t, 60*time.Second, "server 1 handed the returning server leaderships", func() bool {
		return counts()[gone] > 0 && bal(1).transfers.Load() > 0
	})
	polls := bal(0).polls.Load()
	waitFor(t, 30*time.Second, "5 more balancer looks on server 0", func() bool { return bal(0).polls.Load() >= polls+5 })
	if d := bal(0).transfers.Load() - moved0; d != 0 {
		t.Fatalf("server 0 moved %d leaderships away while it caught up", d)
	}
	pin("")
	waitFor(t, 60*time.Second, "server 0 moves its excess once done", func() bool { return bal(0).transfers.Load() > moved0 })
}

// pinCatchingUp makes the server named by the last call of the returned
// func say it catches up for as long as it stays named (catchUpPinned);
// "" names none.
func pinCatchingUp(t *testing.T) func(name string) {
	var pinned atomic.Value
	pinned.Store("")
	setForTest(t, &catchUpPinned, func(name string) bool {
		g, _ := pinned.Load().(string)
		return g != "" && name == g
	})
	return func(name string) { pinned.Store(name) }
}
