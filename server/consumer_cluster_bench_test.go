package server

import (
	"fmt"
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
