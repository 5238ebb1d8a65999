package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// runTrickle publishes rate messages per second for dur, spread evenly
// round-robin over the streams s0..s<n-1> (scripts/stream-trickle: many
// lightly active streams), each a JetStream publish awaiting its ack, with
// at most window in flight (window goroutines publish one at a time). A
// clock ticking every 5 ms hands out the publishes due by then; when every
// publisher is busy the hand-out waits, and late counts the ticks that
// found the queue full (the rate then falls behind). Latencies (from the
// publish call to its ack) of the publishes begun in the first warm are
// left out of the percentiles.
func runTrickle(url string, n, rate int, dur, warm time.Duration, window int, payload []byte) {
	nc, js := connect(url)
	defer nc.Close()
	waitMeta(js)
	jobs := make(chan int, window)
	var mu sync.Mutex
	var lat []time.Duration
	var failed, acked atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range max(window, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for i := range jobs {
				t := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := js.Publish(ctx, scaleName(i%n), payload)
				cancel()
				if err != nil {
					failed.Add(1)
					continue
				}
				acked.Add(1)
				if t.Sub(start) >= warm {
					mine = append(mine, time.Since(t))
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	sent, late := 0, 0
	tick := time.NewTicker(5 * time.Millisecond)
	for now := range tick.C {
		el := now.Sub(start)
		if el >= dur {
			break
		}
		due := int(el.Seconds() * float64(rate))
		for ; sent < due; sent++ {
			select {
			case jobs <- sent:
			default:
				late++
				jobs <- sent
			}
		}
	}
	tick.Stop()
	close(jobs)
	wg.Wait()
	el := time.Since(start)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return -1
		}
		return float64(lat[int(p*float64(len(lat)-1))].Microseconds())
	}
	fmt.Printf("sent=%d acked=%d failed=%d late=%d rate=%.1f p50_us=%.0f p90_us=%.0f p99_us=%.0f p999_us=%.0f max_us=%.0f timed=%d\n",
		sent, acked.Load(), failed.Load(), late, float64(acked.Load())/el.Seconds(),
		pct(0.5), pct(0.9), pct(0.99), pct(0.999), pct(1), len(lat))
}
