package server

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// kvClusterClient runs a 3-server cluster, creates the R3 stream that
// make makes through a client of server 0 and returns a client connected
// to a server that does not lead it.
func clusterClientOffLeader(t *testing.T, stream string, make func(js jetstream.JetStream)) (*jsTestCluster, *nats.Conn, jetstream.JetStream) {
	t.Helper()
	c := runJSCluster(t, 3)
	_, js0 := jsClient(t, c.servers[0])
	make(js0)
	var leader string
	waitFor(t, 10*time.Second, "stream leader", func() bool {
		st, err := js0.Stream(ctx(t), stream)
		if err == nil && st.CachedInfo().Cluster != nil {
			leader = st.CachedInfo().Cluster.Leader
		}
		return leader != ""
	})
	for _, s := range c.servers {
		if s.Name() != leader {
			nc, js := jsClient(t, s)
			return c, nc, js
		}
	}
	t.Fatal("no follower")
	return nil, nil, nil
}

func TestJetStreamClusterKVWatchKeysHistoryR3(t *testing.T) {
	var kv jetstream.KeyValue
	_, _, js := clusterClientOffLeader(t, "KV_B", func(js0 jetstream.JetStream) {
		var err error
		if _, err = js0.CreateKeyValue(ctx(t), jetstream.KeyValueConfig{Bucket: "B", Replicas: 3, History: 5}); err != nil {
			t.Fatal(err)
		}
	})
	kv, err := js.KeyValue(ctx(t), "B")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		for _, k := range []string{"a", "b", "c"} {
			if _, err := kv.Put(ctx(t), k, []byte(fmt.Sprintf("%s%d", k, i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	w, err := kv.WatchAll(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var initial []string
	for {
		e := kvNext(t, w)
		if e == nil {
			break
		}
		initial = append(initial, e.Key()+"="+string(e.Value()))
	}
	if want := []string{"a=a2", "b=b2", "c=c2"}; !slices.Equal(initial, want) {
		t.Fatalf("initial values %v, want %v", initial, want)
	}
	if _, err := kv.Put(ctx(t), "d", []byte("d0")); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx(t), "a", []byte("a3")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"d=d0", "a=a3"} {
		if e := kvNext(t, w); e == nil || e.Key()+"="+string(e.Value()) != want {
			t.Fatalf("update %v, want %s", e, want)
		}
	}
	keys, err := kv.Keys(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"a", "b", "c", "d"}) {
		t.Fatalf("keys %v", keys)
	}
	hist, err := kv.History(ctx(t), "a")
	if err != nil {
		t.Fatal(err)
	}
	var vals []string
	for _, e := range hist {
		vals = append(vals, string(e.Value()))
	}
	if !slices.Equal(vals, []string{"a0", "a1", "a2", "a3"}) {
		t.Fatalf("history %v", vals)
	}
}

// kvNext is the watcher's next entry (nil: the end of initial values).
func kvNext(t *testing.T, w jetstream.KeyWatcher) jetstream.KeyValueEntry {
	t.Helper()
	select {
	case e := <-w.Updates():
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no watch update")
	}
	return nil
}

func TestJetStreamClusterObjectStoreR3(t *testing.T) {
	c, _, js := clusterClientOffLeader(t, "OBJ_O", func(js0 jetstream.JetStream) {
		if _, err := js0.CreateObjectStore(ctx(t), jetstream.ObjectStoreConfig{Bucket: "O", Replicas: 3}); err != nil {
			t.Fatal(err)
		}
	})
	obs, err := js.ObjectStore(ctx(t), "O")
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 40000) // 640 KB: five chunks
	if _, err := obs.PutBytes(ctx(t), "big", big); err != nil {
		t.Fatal(err)
	}
	if _, err := obs.PutString(ctx(t), "small", "hello"); err != nil {
		t.Fatal(err)
	}
	// Direct gets (object info) may be answered by a replica that lags the
	// pub acks, as nats-server's followers may: read once all applied them.
	waitReplicasApplied(t, c, "OBJ_O")
	got, err := obs.GetBytes(ctx(t), "big")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, big) {
		t.Fatalf("got %d bytes back, want %d equal", len(got), len(big))
	}
	if s, err := obs.GetString(ctx(t), "small"); err != nil || s != "hello" {
		t.Fatalf("small: %q %v", s, err)
	}
	list, err := obs.List(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range list {
		names = append(names, o.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"big", "small"}) {
		t.Fatalf("list %v", names)
	}
}

// waitReplicasApplied waits until every replica of the stream applied the
// same last index.
func waitReplicasApplied(t *testing.T, c *jsTestCluster, stream string) {
	t.Helper()
	waitFor(t, 10*time.Second, "replicas applied alike", func() bool {
		reps := c.replicas(stream)
		var idx []uint64
		for _, m := range reps {
			m.mu.Lock()
			idx = append(idx, m.lastIndex)
			m.mu.Unlock()
		}
		return len(idx) == 3 && idx[0] == idx[1] && idx[1] == idx[2]
	})
}

// A KV watch outlives a stepdown of its bucket's leader: its ordered
// consumer (local to the old leader) goes with the leadership, nats.go
// recreates it after missed heartbeats, and the updates made after the
// stepdown arrive once each.
func TestJetStreamClusterKVWatchAcrossStepdown(t *testing.T) {
	c, nc, js := clusterClientOffLeader(t, "KV_W", func(js0 jetstream.JetStream) {
		if _, err := js0.CreateKeyValue(ctx(t), jetstream.KeyValueConfig{Bucket: "W", Replicas: 3, History: 5}); err != nil {
			t.Fatal(err)
		}
	})
	nc.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { t.Logf("async error: %v", err) })
	kv, err := js.KeyValue(ctx(t), "W")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx(t), "k", []byte("0")); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(context.Background()) // ctx(t) ends in 10s, and the watch with it
	defer cancel()
	w, err := kv.Watch(wctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if e := kvNext(t, w); e == nil || string(e.Value()) != "0" {
		t.Fatalf("initial %v", e)
	}
	if e := kvNext(t, w); e != nil {
		t.Fatalf("want the end of initial values, got %s", e.Value())
	}
	leader, _ := infoOutcome(t, nc, "KV_W")
	stepdownStream(t, nc, "KV_W")
	awaitNewLeader(t, c, nc, "KV_W", leader)
	for i := 1; i <= 3; i++ {
		if _, err := kv.Put(ctx(t), "k", []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 3; i++ {
		select {
		case e := <-w.Updates():
			if e == nil || string(e.Value()) != fmt.Sprint(i) {
				t.Fatalf("update %d: %v", i, e)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("update %d never came", i)
		}
	}
	select {
	case e := <-w.Updates():
		t.Fatalf("one more update: %v", e)
	case <-time.After(200 * time.Millisecond):
	}
}
