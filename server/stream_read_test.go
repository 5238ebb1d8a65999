package server

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestJetStreamClusterKVGetAfterPutThroughFollower: a KV Put acknowledged
// through one server, then at once a KV Get (a direct get) through a
// follower of the stream, sees the Put. The follower answers only once it
// has applied up to its leader's commit index as of the request; served
// at once from its own state (stale_direct_reads, nats-server's behaviour)
// the Get often misses the Put, the follower not having heard yet that it
// committed.
func TestJetStreamClusterKVGetAfterPutThroughFollower(t *testing.T) {
	stale := kvStaleGets(t, os.Getenv("TERN_STALE_DIRECT") != "", 200)
	if stale != 0 {
		t.Fatalf("%d of 200 Gets through a follower missed the Put acknowledged before them", stale)
	}
}

// kvStaleGets puts n values into an R3 bucket, each through the stream
// leader or a follower in turn, and gets each at once through the other
// follower; it returns how many Gets missed their Put.
func kvStaleGets(t *testing.T, staleOption bool, n int) int {
	c := runJSClusterWith(t, 3, func(_ int, o *Options) { o.JetStreamStaleDirectReads = staleOption })
	_, js0 := jsClient(t, c.servers[0])
	if _, err := js0.CreateKeyValue(ctx(t), jetstream.KeyValueConfig{Bucket: "RD", Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	var leader string
	waitFor(t, 10*time.Second, "stream leader", func() bool {
		st, err := js0.Stream(ctx(t), "KV_RD")
		if err == nil && st.CachedInfo().Cluster != nil {
			leader = st.CachedInfo().Cluster.Leader
		}
		return leader != ""
	})
	var lead jetstream.KeyValue
	var follows []jetstream.KeyValue
	for _, s := range c.servers {
		_, js := jsClient(t, s)
		var kv jetstream.KeyValue
		waitFor(t, 10*time.Second, "the bucket known to "+s.Name(), func() bool { // 10008 until it knows the leader
			var err error
			kv, err = js.KeyValue(ctx(t), "RD")
			return err == nil
		})
		if s.Name() == leader {
			lead = kv
		} else {
			follows = append(follows, kv)
		}
	}
	// Every replica serves direct gets once it is current.
	if _, err := lead.PutString(ctx(t), "ready", "1"); err != nil {
		t.Fatal(err)
	}
	for _, kv := range follows {
		waitFor(t, 10*time.Second, "a follower serving direct gets", func() bool {
			_, err := kv.Get(ctx(t), "ready")
			return err == nil
		})
	}
	stale := 0
	for i := range n {
		put, get := lead, follows[1]
		if i%2 == 1 {
			put = follows[0]
		}
		key, val := fmt.Sprintf("k%d", i%4), fmt.Sprintf("v%d", i)
		rev, err := put.PutString(ctx(t), key, val)
		if err != nil {
			t.Fatal(err)
		}
		e, err := get.Get(ctx(t), key)
		switch {
		case err != nil && (i >= 4 || err != jetstream.ErrKeyNotFound):
			t.Fatalf("get %s after put %d: %v", key, i, err)
		case err != nil || e.Revision() < rev:
			stale++
		case string(e.Value()) != val || e.Revision() != rev:
			t.Fatalf("get %s: %q at %d, put %q at %d", key, e.Value(), e.Revision(), val, rev)
		}
	}
	t.Logf("%d of %d gets missed the put acknowledged before them", stale, n)
	return stale
}
