//go:build !race

package server

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestNoRaceJetStreamClusterCASChaosPartition partitions the cluster again
// and again while the compare-and-set clients write through every server
// and readers read through every server (STREAM.MSG.GET, direct gets and
// STREAM.INFO): the stream's leader cut off from both followers (the
// majority elects another and takes writes while the old one still
// believes it leads), the leader cut from one follower only (a partial
// partition: both still reach the third), or a random server isolated;
// each for 1-3 s, then healed. Every acknowledged write must be stored,
// the history (reads included) linearizable, and every server must answer
// reads again within seconds of the last heal (issue 19: one server still
// answered 10008 well after the faults had healed).
func TestNoRaceJetStreamClusterCASChaosPartition(t *testing.T) {
	var rnp atomic.Pointer[routeNet] // set by the fault, read at cleanup
	t.Cleanup(func() {               // the faults did cut routes
		rn := rnp.Load()
		if rn == nil {
			return
		}
		severed, refused, held := rn.cuts()
		t.Logf("routes closed by the cuts: %d open, %d new; open routes silenced: %d", severed, refused, held)
		if severed+held == 0 {
			t.Error("no cut closed or silenced a route")
		}
	})
	runChaos(t, chaosRun{direct: true, info: true, partitions: true, duration: 8 * time.Second,
		fault: func(c *chaosCluster, n int) {
			time.Sleep(time.Duration(500+rand.IntN(1000)) * time.Millisecond)
			rnp.Store(c.net)
			names := serverNames(c)
			lead := c.streamLeader("KV")
			d := time.Duration(1000+rand.IntN(2000)) * time.Millisecond
			// Every other fault silences instead of closing: the routes
			// stay open and carry nothing (found only by missing pings).
			quiet := n%2 == 1
			how := map[bool]string{false: "closing routes", true: "silently"}[quiet]
			switch {
			case lead >= 0 && n%3 == 0:
				t.Logf("isolating the leader %s for %v (%s)", names[lead], d, how)
				c.net.isolate(names[lead], names, quiet)
			case lead >= 0 && n%3 == 1:
				other := names[(lead+1+rand.IntN(2))%3]
				t.Logf("cutting the leader %s from %s for %v (%s)", names[lead], other, d, how)
				c.net.cutPair(names[lead], other, quiet)
			default:
				victim := names[rand.IntN(3)]
				t.Logf("isolating %s for %v (%s)", victim, d, how)
				c.net.isolate(victim, names, quiet)
			}
			time.Sleep(d)
			c.net.healAndMesh(names)
		}})
}

// TestNoRaceJetStreamClusterCASChaosMixed mixes the faults of the other
// chaos tests in one history: a kill -9 and restart of a random server, a
// SIGSTOP of the leader for 1-3 s, the leader isolated, and the leader cut
// from one follower, in turn.
func TestNoRaceJetStreamClusterCASChaosMixed(t *testing.T) {
	runChaos(t, chaosRun{direct: true, info: true, partitions: true, duration: 10 * time.Second,
		fault: func(c *chaosCluster, n int) {
			time.Sleep(time.Duration(500+rand.IntN(1000)) * time.Millisecond)
			names := serverNames(c)
			lead := c.streamLeader("KV")
			d := time.Duration(1000+rand.IntN(2000)) * time.Millisecond
			switch {
			case n%4 == 0 || lead < 0:
				victim := rand.IntN(3)
				t.Logf("killing %s", names[victim])
				c.bounce(victim, 500*time.Millisecond, syscall.SIGKILL)
				return
			case n%4 == 1:
				t.Logf("pausing the leader %s for %v", names[lead], d)
				c.pause(lead, d)
				return
			case n%4 == 2:
				t.Logf("isolating the leader %s for %v", names[lead], d)
				c.net.isolate(names[lead], names, n%8 == 6)
			default:
				other := names[(lead+1+rand.IntN(2))%3]
				t.Logf("cutting the leader %s from %s for %v", names[lead], other, d)
				c.net.sever(names[lead], other)
			}
			time.Sleep(d)
			c.net.healAndMesh(names)
		}})
}

// servesReadsAgain fails t unless a STREAM.MSG.GET through each server of
// c is answered (not 10008, not silence) within d.
func servesReadsAgain(t *testing.T, c *chaosCluster, stream string, d time.Duration) {
	t.Helper()
	for i, p := range c.ports {
		nc := connectNATS(t, fmt.Sprintf("nats://127.0.0.1:%d", p), nats.IgnoreDiscoveredServers())
		deadline := time.Now().Add(d)
		for {
			if _, ok := chaosRead(nc, "kv.k0"); ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("server %d answered no read within %v of the last heal", i+1, d)
			}
			time.Sleep(50 * time.Millisecond)
		}
		nc.Close()
	}
}
