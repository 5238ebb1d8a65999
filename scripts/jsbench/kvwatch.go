package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// runKVWatch fills a fresh file bucket with n keys (async publishes to the
// bucket's subjects, not timed), then times kv.WatchAll from its start until
// the nil entry that marks the end of the initial values, rounds times, each
// with a fresh watcher.
func runKVWatch(url, bucket string, n, rounds int, payload []byte) {
	nc, js := connect(url)
	defer nc.Close()
	ctx := context.Background()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket, Storage: jetstream.FileStorage, Replicas: replicas()})
	if err != nil {
		fatal("create bucket: " + err.Error())
	}
	fillStart := time.Now()
	for i := 0; i < n; i++ {
		subj := "$KV." + bucket + ".k" + strconv.Itoa(i)
		_, err := js.PublishAsync(subj, payload)
		for errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
			_, err = js.PublishAsync(subj, payload) // the window was full for 200 ms: wait on
		}
		if err != nil {
			fatal("put: " + err.Error())
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(2 * time.Minute):
		fatal("filling the bucket did not finish in 2 minutes")
	}
	fill := time.Since(fillStart)
	best := time.Duration(0)
	var all []string
	for r := 0; r < rounds; r++ {
		el, got := watchOnce(kv, n)
		if got != n {
			fatal(fmt.Sprintf("watch saw %d initial values, want %d", got, n))
		}
		if best == 0 || el < best {
			best = el
		}
		all = append(all, strconv.FormatInt(el.Milliseconds(), 10))
	}
	fmt.Printf("fill_rate=%.0f watch_ms=%d keys_per_s=%.0f rounds_ms=%v\n",
		float64(n)/fill.Seconds(), best.Milliseconds(), float64(n)/best.Seconds(), all)
}

func watchOnce(kv jetstream.KeyValue, n int) (time.Duration, int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	w, err := kv.WatchAll(ctx)
	if err != nil {
		fatal("watch: " + err.Error())
	}
	defer w.Stop()
	got := 0
	for e := range w.Updates() {
		if e == nil {
			return time.Since(start), got
		}
		got++
	}
	fatal(fmt.Sprintf("watch ended after %d values without the end marker", got))
	return 0, 0
}
