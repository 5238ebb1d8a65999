// Command jsbench measures the JetStream figures `nats bench` does not: sync
// publish latency percentiles, async publishes that each carry
// Nats-Expected-Last-Subject-Sequence, and compare-and-set updates of one hot
// KV key from several clients. scripts/bench runs it against Tern and the
// reference server alike; it prints one line of key=value pairs.
//
//	jsbench sync  -s URL -subject S -n N
//	jsbench async -s URL -subject S -n N [-cas|-fresh] [-window W]
//	jsbench kvhot -s URL[,URL...] -bucket B -clients C -dur D
//	jsbench consumers -s URL -stream S -n N -workers K -limit D
//	jsbench kvwatch -s URL -bucket B -n N -rounds R
//	jsbench push -s URL -stream S -n N
//	jsbench streams -s URL -n N -limit D [-parallel P]
//	jsbench streamsup -s URL -n N -since UNIXNS -limit D
//	jsbench streamsin -s URL -n N -server NAME -since UNIXNS -limit D
//	jsbench trickle -s URL -n N -rate R -dur D -warm W -window K
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func main() {
	if len(os.Args) < 2 {
		fatal("usage: jsbench sync|async|kvhot|consumers|kvwatch|push|streams|streamsup|streamsin|trickle [flags]")
	}
	mode := os.Args[1]
	fs := flag.NewFlagSet(mode, flag.ExitOnError)
	urls := fs.String("s", nats.DefaultURL, "server URLs, comma separated")
	subject := fs.String("subject", "bench.js", "subject (async -cas appends .<n>)")
	n := fs.Int("n", 10000, "messages")
	size := fs.Int("size", 128, "payload bytes")
	cas := fs.Bool("cas", false, "each publish expects last subject sequence 0 on a fresh subject")
	fresh := fs.Bool("fresh", false, "each publish goes to a fresh subject (implied by -cas)")
	window := fs.Int("window", 256, "async publishes in flight")
	bucket := fs.String("bucket", "hot", "KV bucket")
	clients := fs.Int("clients", 8, "KV clients")
	dur := fs.Duration("dur", 5*time.Second, "kvhot, trickle: duration")
	stream := fs.String("stream", "scale", "consumers: the stream (created if missing)")
	workers := fs.Int("workers", 8, "consumers: parallel creators")
	parallelCreates := fs.Int("parallel", 1, "streams: creates in flight at once (1: one after another)")
	limit := fs.Duration("limit", 10*time.Minute, "consumers: stop creating after this long")
	rounds := fs.Int("rounds", 1, "kvwatch: watches timed (the fastest is reported)")
	server := fs.String("server", "", "streamsin: the server that must be current in every stream")
	since := fs.Int64("since", 0, "streamsup, streamsin: times count from this Unix time in ns (default: now)")
	rate := fs.Int("rate", 500, "trickle: publishes per second over all streams")
	warm := fs.Duration("warm", 2*time.Second, "trickle: latencies of this first stretch left out")
	cpuprofile := fs.String("cpuprofile", "", "write the client's CPU profile here")
	_ = fs.Parse(os.Args[2:])
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fatal(err.Error())
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fatal(err.Error())
		}
		defer pprof.StopCPUProfile()
	}
	payload := make([]byte, *size)
	switch mode {
	case "sync":
		runSync(strings.Split(*urls, ",")[0], *subject, *n, payload)
	case "async":
		runAsync(strings.Split(*urls, ",")[0], *subject, *n, *window, *cas, *fresh || *cas, payload)
	case "kvhot":
		runKVHot(strings.Split(*urls, ","), *bucket, *clients, *dur, payload)
	case "consumers":
		runConsumers(strings.Split(*urls, ",")[0], *stream, *n, *workers, *limit)
	case "kvwatch":
		runKVWatch(strings.Split(*urls, ",")[0], *bucket, *n, *rounds, payload)
	case "push":
		runPush(strings.Split(*urls, ",")[0], *stream, *n)
	case "streams":
		runStreams(strings.Split(*urls, ",")[0], *n, *parallelCreates, *limit)
	case "streamsup", "streamsin":
		if *since == 0 {
			*since = time.Now().UnixNano()
		}
		if mode == "streamsup" {
			runStreamsUp(strings.Split(*urls, ",")[0], *n, *since, *limit)
		} else {
			runStreamsIn(strings.Split(*urls, ",")[0], *n, *server, *since, *limit)
		}
	case "trickle":
		runTrickle(strings.Split(*urls, ",")[0], *n, *rate, *dur, *warm, *window, payload)
	default:
		fatal("unknown mode " + mode)
	}
}

func fatal(msg string) {
	fmt.Fprintln(os.Stderr, msg)
	os.Exit(1)
}

func connect(url string) (*nats.Conn, jetstream.JetStream) {
	nc, err := nats.Connect(url, nats.MaxReconnects(-1))
	if err != nil {
		fatal("connect: " + err.Error())
	}
	js, err := jetstream.New(nc)
	if err != nil {
		fatal(err.Error())
	}
	return nc, js
}

// runSync publishes n messages one at a time and reports the latency percentiles.
func runSync(url, subject string, n int, payload []byte) {
	nc, js := connect(url)
	defer nc.Close()
	lat := make([]time.Duration, 0, n)
	start := time.Now()
	for i := 0; i < n; i++ {
		t := time.Now()
		if _, err := js.Publish(context.Background(), subject, payload); err != nil {
			fatal("publish: " + err.Error())
		}
		lat = append(lat, time.Since(t))
	}
	el := time.Since(start)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
	fmt.Printf("rate=%.0f p50_us=%.0f p90_us=%.0f p99_us=%.0f\n", float64(n)/el.Seconds(), pct(0.5), pct(0.9), pct(0.99))
}

// runAsync keeps window publishes in flight; with fresh each goes to a
// fresh subject, and with cas it also expects that subject's last sequence
// to be 0, so every one should succeed. Failures are counted in the
// client's error callback and the run ends when every ack is in: the client
// spends as little CPU as nats.go allows per publish (no goroutine or
// channel each), so the servers, which share the machine with it, are what
// is measured.
func runAsync(url, subject string, n, window int, cas, fresh bool, payload []byte) {
	var failed atomic.Int64
	codes := sync.Map{}
	onErr := func(_ jetstream.JetStream, _ *nats.Msg, err error) {
		failed.Add(1)
		v, _ := codes.LoadOrStore(errCode(err), new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
	}
	nc, _ := connect(url)
	defer nc.Close()
	ajs, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(window),
		jetstream.WithPublishAsyncErrHandler(onErr))
	if err != nil {
		fatal(err.Error())
	}
	var opts []jetstream.PublishOpt
	if cas {
		opts = append(opts, jetstream.WithExpectLastSequencePerSubject(0))
	}
	stalls := 0
	start := time.Now()
	for i := 0; i < n; i++ {
		msg := &nats.Msg{Subject: subject, Data: payload, Header: nats.Header{}}
		if fresh {
			msg.Subject = subject + "." + strconv.Itoa(i)
		}
		_, err := ajs.PublishMsgAsync(msg, opts...)
		for errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
			// No ack for the stall wait (200 ms) with the window full:
			// count it, as a pause the publisher saw, and go on.
			stalls++
			_, err = ajs.PublishMsgAsync(msg, opts...)
		}
		if err != nil {
			fatal("publish: " + err.Error())
		}
	}
	select {
	case <-ajs.PublishAsyncComplete():
	case <-time.After(time.Minute):
		fatal(fmt.Sprintf("%d acks missing a minute after the last publish", ajs.PublishAsyncPending()))
	}
	el := time.Since(start)
	fmt.Printf("rate=%.0f failed=%d stalls=%d%s\n", float64(n)/el.Seconds(), failed.Load(), stalls, codeSummary(&codes))
}

// runKVHot runs clients that each update one key with the revision they last
// saw; a 10071 (wrong last sequence) makes a client read the key again. Any
// other error is a spurious rejection.
func runKVHot(urls []string, bucket string, clients int, dur time.Duration, payload []byte) {
	nc, js := connect(urls[0])
	kv, err := js.CreateOrUpdateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: bucket, Replicas: replicas()})
	if err != nil {
		fatal("create bucket: " + err.Error())
	}
	if _, err := kv.Put(context.Background(), "k", payload); err != nil {
		fatal("put: " + err.Error())
	}
	nc.Close()
	var ok, conflicts, spurious atomic.Int64
	codes := sync.Map{}
	deadline := time.Now().Add(dur)
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(url string) {
			defer wg.Done()
			nc, js := connect(url)
			defer nc.Close()
			kv, err := js.KeyValue(context.Background(), bucket)
			if err != nil {
				fatal("bind bucket: " + err.Error())
			}
			rev := uint64(0)
			for time.Now().Before(deadline) {
				if rev == 0 {
					e, err := kv.Get(context.Background(), "k")
					if err != nil {
						continue
					}
					rev = e.Revision()
				}
				nr, err := kv.Update(context.Background(), "k", payload, rev)
				switch {
				case err == nil:
					ok.Add(1)
					rev = nr
				case errors.Is(err, jetstream.ErrKeyExists):
					conflicts.Add(1)
					rev = 0
				default:
					spurious.Add(1)
					v, _ := codes.LoadOrStore(errCode(err), new(atomic.Int64))
					v.(*atomic.Int64).Add(1)
					rev = 0
				}
			}
		}(urls[c%len(urls)])
	}
	wg.Wait()
	fmt.Printf("updates_per_s=%.0f ok=%d conflicts=%d spurious=%d%s\n",
		float64(ok.Load())/dur.Seconds(), ok.Load(), conflicts.Load(), spurious.Load(), codeSummary(&codes))
}

func replicas() int {
	if v, err := strconv.Atoi(os.Getenv("JSBENCH_REPLICAS")); err == nil {
		return v
	}
	return 1
}

func errCode(err error) string {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return strconv.Itoa(int(apiErr.ErrorCode))
	}
	return strings.ReplaceAll(err.Error(), " ", "_")
}

func codeSummary(codes *sync.Map) string {
	var b strings.Builder
	codes.Range(func(k, v any) bool {
		fmt.Fprintf(&b, " err_%s=%d", k, v.(*atomic.Int64).Load())
		return true
	})
	return b.String()
}
