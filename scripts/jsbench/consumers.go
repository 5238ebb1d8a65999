package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// runConsumers creates the file stream (replicas from JSBENCH_REPLICAS) if it
// is missing, then n durable pull consumers with explicit acks from workers
// goroutines, each creating one at a time. It stops early at limit and prints
// how many it created and the rate; per_ms is the mean time per create over
// the whole run (the servers' throughput, not one request's latency).
func runConsumers(url, stream string, n, workers int, limit time.Duration) {
	nc, js := connect(url)
	defer nc.Close()
	ensureStream(js, stream)
	var next, created, failed atomic.Int64
	codes := sync.Map{}
	start := time.Now()
	deadline := start.Add(limit)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				if err := createOne(js, stream, "c"+strconv.FormatInt(i, 10), deadline); err != nil {
					failed.Add(1)
					v, _ := codes.LoadOrStore(errCode(err), new(atomic.Int64))
					v.(*atomic.Int64).Add(1)
					continue
				}
				created.Add(1)
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	c := created.Load()
	perMs := 0.0
	if c > 0 {
		perMs = float64(el.Milliseconds()) / float64(c)
	}
	fmt.Printf("created=%d failed=%d elapsed_s=%.1f rate=%.0f per_ms=%.2f capped=%v%s\n",
		c, failed.Load(), el.Seconds(), float64(c)/el.Seconds(), perMs, c < int64(n), codeSummary(&codes))
}

// ensureStream creates the file stream, retrying for up to a minute while a
// fresh cluster elects its meta leader.
func ensureStream(js jetstream.JetStream, stream string) {
	// max_consumers set: nats-server allows 1,000 per stream by default.
	cfg := jetstream.StreamConfig{Name: stream, Subjects: []string{stream + ".>"}, Storage: jetstream.FileStorage,
		Replicas: replicas(), MaxConsumers: 1_000_000}
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := js.CreateOrUpdateStream(ctx, cfg)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			fatal("create stream: " + err.Error())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// createOne retries a create that timed out (the server may still be busy
// with earlier ones) until the run's deadline; other errors end it.
func createOne(js jetstream.JetStream, stream, name string, deadline time.Time) error {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{
			Durable: name, AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverAllPolicy,
		})
		cancel()
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || time.Now().After(deadline) {
			return err
		}
	}
}
