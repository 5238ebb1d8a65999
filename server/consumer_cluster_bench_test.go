package server

import (
	"fmt"
	"os"
	"runtime/pprof"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// BenchmarkJSClusterConsumerCreateR3 creates b.N durable pull consumers of
// one R3 stream of a 3-server in-process cluster (each a log entry of the
// stream), then reports the CPU the three servers use while idle for two
// seconds (consumers of a replicated stream have no raft group and no
// timers while nothing is pending).
func BenchmarkJSClusterConsumerCreateR3(b *testing.B) {
	c := runJSCluster(b, 3)
	_, js := jsClient(b, c.servers[0])
	createStream(b, js, jetstream.StreamConfig{Name: "B", Subjects: []string{"b.>"}, Replicas: 3, MaxConsumers: 1 << 20})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := js.CreateOrUpdateConsumer(ctx(b), "B", jetstream.ConsumerConfig{Durable: fmt.Sprintf("C%d", i), AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	before := cpu()
	time.Sleep(2 * time.Second) // the measurement is of idle time passing
	b.ReportMetric(float64(cpu()-before)/float64(2*time.Second)*100, "idle-cpu-%")
}

// BenchmarkJSClusterConsumeR3 reads b.N messages of an R3 file stream as
// `nats bench js consume --acks explicit` does: Consume with 500 messages
// buffered, every message acked (async) in the callback, max ack pending
// 1,000 (nats-server's default), the client on the stream leader's server.
// TERN_CONSUME_PROFILE=<file> writes a CPU profile of the consuming only.
func BenchmarkJSClusterConsumeR3(b *testing.B) {
	c := runJSCluster(b, 3)
	_, js0 := jsClient(b, c.servers[0])
	st := createStream(b, js0, jetstream.StreamConfig{Name: "B", Subjects: []string{"b.>"}, Replicas: 3})
	var leader *Server
	for _, s := range c.servers {
		if s.Name() == st.CachedInfo().Cluster.Leader {
			leader = s
		}
	}
	_, js := jsClient(b, leader)
	payload := make([]byte, 128)
	for i := 0; i < b.N; i++ {
		if _, err := js.PublishAsync("b.x", payload); err != nil {
			b.Fatal(err)
		}
		if i%1000 == 999 {
			<-js.PublishAsyncComplete()
		}
	}
	<-js.PublishAsyncComplete()
	cons, err := js.CreateOrUpdateConsumer(ctx(b), "B", jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	var n atomic.Int64
	if f, _ := os.Create(os.Getenv("TERN_CONSUME_PROFILE")); f != nil {
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	b.ResetTimer()
	cc, err := cons.Consume(func(m jetstream.Msg) {
		m.Ack()
		if n.Add(1) == int64(b.N) {
			close(done)
		}
	}, jetstream.PullMaxMessages(500))
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Stop()
	select {
	case <-done:
	case <-time.After(120 * time.Second):
		b.Fatalf("%d of %d messages in 120 s", n.Load(), b.N)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
