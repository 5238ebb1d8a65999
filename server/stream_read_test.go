package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// TestJetStreamClusterDirectGetCutOffNoAnswer: a replica whose two peers
// are gone cannot confirm what its group committed: a direct get through
// it is not answered (the client times out) instead of answered from
// its possibly stale state; STREAM.MSG.GET through it gets 10008 or
// nothing. Once a peer is back, the same get is answered.
func TestJetStreamClusterDirectGetCutOffNoAnswer(t *testing.T) {
	c := runJSCluster(t, 3)
	nc, js := jsClient(t, c.servers[0])
	if _, err := js.CreateKeyValue(ctx(t), jetstream.KeyValueConfig{Bucket: "CUT", Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx(t), "CUT")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.PutString(ctx(t), "k", "v"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the replica on S1 serving direct gets", func() bool {
		m := c.servers[0].js.Load().account(globalAccountName).lookup("KV_CUT")
		if m == nil {
			return false
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.subs) > 0
	})
	c.servers[1].Shutdown()
	c.servers[2].Shutdown()
	// A leader may still answer under its lease, which a heartbeat round
	// acknowledged before the peers went can hold until raftLeaseTicks
	// after their shutdown; gets sent after that must go unanswered.
	leaseEnd := time.Now().Add(raftLeaseTicks * raftTick)
	for past := 0; past < 2; {
		sent := time.Now()
		resp, err := nc.Request("$JS.API.DIRECT.GET.KV_CUT.$KV.CUT.k", nil, 1500*time.Millisecond)
		if sent.Before(leaseEnd) {
			continue
		}
		past++
		if err == nil {
			t.Fatalf("a direct get through a replica cut off from its peers was answered: %q %q", resp.Header, resp.Data)
		}
		resp, err = nc.Request("$JS.API.STREAM.MSG.GET.KV_CUT", []byte(`{"last_by_subj":"$KV.CUT.k"}`), 1500*time.Millisecond)
		if err == nil && !strings.Contains(string(resp.Data), `"err_code":10008`) {
			t.Fatalf("STREAM.MSG.GET through a replica cut off from its peers was answered: %s", resp.Data)
		}
	}
	c.servers[1] = runServer(t, c.opts[1])
	waitFor(t, 20*time.Second, "the direct get answered once a peer is back", func() bool {
		e, err := kv.Get(ctx(t), "k")
		return err == nil && string(e.Value()) == "v"
	})
}

// The option is read from the jetstream block; it is off by default.
func TestJetStreamStaleDirectReadsOption(t *testing.T) {
	dir := t.TempDir()
	for conf, want := range map[string]bool{
		"jetstream { store_dir: %q }":                            false,
		"jetstream { store_dir: %q, stale_direct_reads: true }":  true,
		"jetstream { store_dir: %q, stale_direct_reads: false }": false,
	} {
		path := filepath.Join(dir, "s.conf")
		if err := os.WriteFile(path, fmt.Appendf(nil, conf, dir), 0o644); err != nil {
			t.Fatal(err)
		}
		o, err := ProcessConfigFile(path)
		if err != nil {
			t.Fatalf("%s: %v", conf, err)
		}
		if o.JetStreamStaleDirectReads != want {
			t.Fatalf("%s: JetStreamStaleDirectReads %v", conf, o.JetStreamStaleDirectReads)
		}
	}
}
