package server

import (
	"net"
	"net/url"
	"sync/atomic"
	"testing"
	"time"
)

// A configured route whose connection is accepted and then dropped at
// once (a peer that refuses it after the TCP handshake, a proxy or load
// balancer in front of a server that is gone, a partition) is dialled
// again with the same backoff as a refused dial. The backoff used to
// restart at 50 ms after every accepted dial, so such a route was dialled
// twenty times a second, for as long as it lasted, each logged twice.
func TestRouteShortLivedBacksOff(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	o := testOptions()
	o.ServerName = "B1"
	o.Cluster.Name = "BACKOFF"
	o.Cluster.Host = "127.0.0.1"
	o.Cluster.Port = RANDOM_PORT
	o.Routes = []*url.URL{{Scheme: "nats-route", Host: l.Addr().String()}}
	runServer(t, o)
	waitFor(t, 5*time.Second, "the first dial", func() bool { return accepted.Load() > 0 })
	start := accepted.Load()
	time.Sleep(3 * time.Second) // the interval the dials are counted over
	// Backing off from 50 ms doubles to 2 s: 6 dials in 3 s at most;
	// without backoff about 60.
	if n := accepted.Load() - start; n > 10 {
		t.Fatalf("%d dials of a route dropped at once within 3 s", n)
	}
}
