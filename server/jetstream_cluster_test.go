package server

import (
	"errors"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// jsCluster3 starts n JetStream servers that all list every route.
type jsTestCluster struct {
	t       testing.TB
	servers []*Server
	opts    []*Options
}

func runJSCluster(t testing.TB, n int) *jsTestCluster {
	t.Helper()
	ports := make([]int, n)
	for i := range ports {
		ports[i] = freePort(t)
	}
	var routes []*url.URL
	for _, p := range ports {
		routes = append(routes, &url.URL{Scheme: "nats-route", Host: fmt.Sprintf("127.0.0.1:%d", p)})
	}
	c := &jsTestCluster{t: t}
	for i := 0; i < n; i++ {
		o := testOptions()
		o.ServerName = fmt.Sprintf("S%d", i+1)
		o.Cluster.Name = "JSC"
		o.Cluster.Host = "127.0.0.1"
		o.Cluster.Port = ports[i]
		o.Routes = routes
		o.JetStream = true
		o.StoreDir = t.TempDir()
		c.opts = append(c.opts, o)
	}
	var wg sync.WaitGroup
	c.servers = make([]*Server, n)
	for i := range c.opts {
		wg.Add(1)
		go func() { defer wg.Done(); c.servers[i] = runServer(t, c.opts[i]) }()
	}
	wg.Wait()
	waitForMesh(t, c.servers)
	c.waitMetaLeader()
	return c
}

func (c *jsTestCluster) waitMetaLeader() *Server {
	var leader *Server
	waitFor(c.t, 15*time.Second, "meta leader", func() bool {
		for _, s := range c.servers {
			if js := s.js.Load(); js != nil && js.cluster != nil && js.cluster.isMetaLeader() {
				leader = s
				return true
			}
		}
		return false
	})
	return leader
}

// replicas returns every server's local replica of the stream.
func (c *jsTestCluster) replicas(name string) []*stream {
	var out []*stream
	for _, s := range c.servers {
		if js := s.js.Load(); js != nil {
			if jsa := js.account(globalAccountName); jsa != nil {
				if m := jsa.lookup(name); m != nil {
					out = append(out, m)
				}
			}
		}
	}
	return out
}

func TestJetStreamClusterCreateAndPublish(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	st, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "R3", Subjects: []string{"r3.>"}, Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	if st.CachedInfo().Cluster == nil || st.CachedInfo().Cluster.Leader == "" {
		t.Fatalf("no leader in create response: %+v", st.CachedInfo().Cluster)
	}
	for i, s := range c.servers {
		_, js := jsClient(t, s)
		ack, err := js.Publish(ctx(t), "r3.x", []byte(fmt.Sprint(i)))
		if err != nil || ack.Sequence != uint64(i+1) {
			t.Fatalf("publish via %s: %+v %v", s.Name(), ack, err)
		}
	}
	waitFor(t, 5*time.Second, "replicas applied", func() bool {
		reps := c.replicas("R3")
		if len(reps) != 3 {
			return false
		}
		for _, m := range reps {
			var st StreamState
			m.store.FastState(&st)
			if st.Msgs != 3 {
				return false
			}
		}
		return true
	})
	_, js2 := jsClient(t, c.servers[2])
	info, err := js2.Stream(ctx(t), "R3")
	if err != nil || info.CachedInfo().State.Msgs != 3 {
		t.Fatalf("info from another server: %v", err)
	}
	if err := js2.DeleteStream(ctx(t), "R3"); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Stream(ctx(t), "R3"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	_ = nats.ErrTimeout
}
