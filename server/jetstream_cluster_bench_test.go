package server

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// BenchmarkJSClusterPublishR3 publishes to an R3 stream of a 3-server
// in-process cluster with 256 publishes in flight (as the bench tools do):
// the raft send and receive paths carry every message twice per publish.
func BenchmarkJSClusterPublishR3(b *testing.B) {
	for _, st := range []jetstream.StorageType{jetstream.FileStorage, jetstream.MemoryStorage} {
		b.Run(st.String(), func(b *testing.B) { benchClusterPublish(b, st) })
	}
}

func benchClusterPublish(b *testing.B, st jetstream.StorageType) {
	c := runJSCluster(b, 3)
	nc := connectNATS(b, c.servers[0].ClientURL())
	js, _ := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(512))
	createStream(b, js, jetstream.StreamConfig{Name: "B", Subjects: []string{"b.>"}, Replicas: 3, Storage: st})
	payload := make([]byte, 128)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; {
		n := min(256, b.N-i)
		futures := make([]jetstream.PubAckFuture, 0, n)
		for j := 0; j < n; j++ {
			f, err := js.PublishAsync("b.k"+strconv.Itoa((i+j)%64), payload)
			if err != nil {
				b.Fatal(err)
			}
			futures = append(futures, f)
		}
		for _, f := range futures {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				b.Fatal(err)
			}
		}
		i += n
	}
}

// TestIdleStreamMemory prints the heap an idle R3 file stream holds on
// each server of a 3-server in-process cluster (all three run in this
// process, so the figure is the growth divided by streams × 3). It runs
// only with TERN_IDLE_STREAMS=<n> (the closing note used 200), e.g.
//
//	TERN_IDLE_STREAMS=200 go test -run TestIdleStreamMemory -v ./server
func TestIdleStreamMemory(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("TERN_IDLE_STREAMS"))
	if n <= 0 {
		t.Skip("set TERN_IDLE_STREAMS=<streams> to measure")
	}
	perStream := idleStreamHeap(t, n)
	t.Logf("%d idle R3 file streams: %.1f KiB heap in use per stream per server", n, perStream/1024)
}

// An idle replicated stream holds little memory: a raft group's queues
// grow with its load instead of preallocating 8,192 slots each (about
// 1.2 MiB per group, 1,450 KiB per idle R3 file stream and server in all;
// about 225 KiB with queues that grow), and so do the WAL's entry index
// (a 128 KiB chunk before), its read cache, the leader's in-flight rings
// and the store's active block buffer (64 KiB before): 20-35 KiB now.
func TestJetStreamClusterIdleStreamsHoldLittleMemory(t *testing.T) {
	const streams = 50 // at 20-35 KiB each, fewer drown in the heap's noise
	perStream := idleStreamHeap(t, streams)
	t.Logf("%.1f KiB heap in use per idle R3 file stream and server", perStream/1024)
	if limit := 128.0 * 1024; perStream > limit {
		t.Fatalf("%.1f KiB per idle R3 stream and server, want at most %.0f", perStream/1024, limit/1024)
	}
}

// idleStreamHeap creates n R3 file streams with one message each and
// returns the heap in use they added, per stream and server.
func idleStreamHeap(t *testing.T, n int) float64 {
	c := runJSCluster(t, 3)
	nc := connectNATS(t, c.servers[0].ClientURL(), nats.Timeout(10*time.Second))
	js, _ := jetstream.New(nc)
	before := heapInUse()
	for i := range n {
		name := fmt.Sprintf("IDLE%d", i)
		createStream(t, js, jetstream.StreamConfig{Name: name, Subjects: []string{"idle." + strconv.Itoa(i)},
			Replicas: 3, Storage: jetstream.FileStorage})
		if _, err := js.Publish(ctx(t), "idle."+strconv.Itoa(i), []byte("x")); err != nil {
			t.Fatalf("publish to %s: %v", name, err)
		}
	}
	waitFor(t, 30*time.Second, "every replica holds its message", func() bool {
		for i := range n {
			reps := c.replicas(fmt.Sprintf("IDLE%d", i))
			if len(reps) != 3 {
				return false
			}
			for _, mset := range reps {
				var ss StreamState
				mset.st().FastState(&ss)
				if ss.Msgs != 1 {
					return false
				}
			}
		}
		return true
	})
	return float64(int64(heapInUse())-int64(before)) / float64(n*3) // the heap can shrink by more than a few streams add
}

func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// BenchmarkJSClusterKVGetR3 gets one key of an R3 bucket (a direct get,
// as KV Get does) through the stream leader's server or a follower's,
// from one client at a time (seq: latency) or 16 (par: throughput), with
// linearizable direct gets (the default: a read index per batch) or
// stale ones (jetstream { stale_direct_reads: true }, nats-server's).
func BenchmarkJSClusterKVGetR3(b *testing.B) {
	for _, mode := range []string{"linearizable", "stale"} {
		for _, via := range []string{"leader", "follower"} {
			for _, par := range []int{1, 16} {
				b.Run(fmt.Sprintf("%s/%s/clients=%d", mode, via, par), func(b *testing.B) {
					benchKVGet(b, mode == "stale", via == "leader", par)
				})
			}
		}
	}
}

func benchKVGet(b *testing.B, stale, viaLeader bool, clients int) {
	c := runJSClusterWith(b, 3, func(_ int, o *Options) { o.JetStreamStaleDirectReads = stale })
	_, js0 := jsClient(b, c.servers[0])
	kv0, err := js0.CreateKeyValue(ctx(b), jetstream.KeyValueConfig{Bucket: "G", Replicas: 3})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := kv0.Put(ctx(b), "k", make([]byte, 128)); err != nil {
		b.Fatal(err)
	}
	var leader string
	waitFor(b, 10*time.Second, "stream leader", func() bool {
		st, err := js0.Stream(ctx(b), "KV_G")
		if err == nil && st.CachedInfo().Cluster != nil {
			leader = st.CachedInfo().Cluster.Leader
		}
		return leader != ""
	})
	var via *Server
	for _, s := range c.servers {
		if (s.Name() == leader) == viaLeader {
			via = s
		}
	}
	_, js := jsClient(b, via)
	var kv jetstream.KeyValue
	waitFor(b, 10*time.Second, "the bucket served through "+via.Name(), func() bool {
		kv, err = js.KeyValue(ctx(b), "G")
		if err == nil {
			_, err = kv.Get(ctx(b), "k")
		}
		return err == nil
	})
	// Until via's replica serves direct gets, another server's does; a
	// stale one could then answer from before the Put.
	waitFor(b, 10*time.Second, "direct gets served by the replica on "+via.Name(), func() bool {
		m := via.js.Load().account(globalAccountName).lookup("KV_G")
		if m == nil {
			return false
		}
		m.mu.Lock()
		subs := len(m.subs)
		m.mu.Unlock()
		var sm StoreMsg
		_, err := m.st().LoadLastMsg("$KV.G.k", &sm)
		return subs > 0 && err == nil
	})
	b.ReportAllocs()
	b.ResetTimer()
	b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := kv.Get(ctx(b), "k"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
