package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Stream names and subjects of the stream-scale runs: stream i is "s<i>" and
// takes the subject "s<i>".
func scaleName(i int) string { return "s" + strconv.Itoa(i) }

// runStreams creates n file streams (replicas from JSBENCH_REPLICAS),
// parallel creates in flight at once (1: one after another, each waiting
// for the answer of the one before), until limit (a create that fails is
// retried; failed counts the failures), timing every block of 500
// answers, then publishes one message into each stream it made. It prints
// the overall rate and the rates of the first and the last full blocks of
// 500 and of 1,000 (or of the whole run when it made fewer).
func runStreams(url string, n, parallel int, limit time.Duration) {
	nc, js := connect(url)
	defer nc.Close()
	waitMeta(js)
	codes := sync.Map{}
	start := time.Now()
	deadline := start.Add(limit)
	var mu sync.Mutex
	var blocks []time.Duration
	blockStart := start
	var made, failed atomic.Int64
	var next atomic.Int64
	done := make([]atomic.Bool, n)
	var wg sync.WaitGroup
	for w := 0; w < max(parallel, 1); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n && time.Now().Before(deadline); {
				if err := createStream(js, scaleName(i), deadline); err != nil {
					// Retried under the same name, so that the streams made
					// are s0..s<made-1> for the phases after.
					failed.Add(1)
					v, _ := codes.LoadOrStore(errCode(err), new(atomic.Int64))
					v.(*atomic.Int64).Add(1)
					time.Sleep(100 * time.Millisecond)
					continue
				}
				done[i].Store(true)
				if m := made.Add(1); m%500 == 0 {
					mu.Lock()
					now := time.Now()
					blocks = append(blocks, now.Sub(blockStart))
					blockStart = now
					mu.Unlock()
				}
				i = int(next.Add(1) - 1)
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	// With parallel creates a capped run may leave gaps: only the prefix
	// s0..s<k-1> that was wholly made counts for the phases after.
	k := 0
	for k < n && done[k].Load() {
		k++
	}
	first5, last5 := blockRates(blocks, 1, float64(made.Load())/el.Seconds())
	first, last := blockRates(blocks, 2, float64(made.Load())/el.Seconds())
	pubStart := time.Now()
	published := publishEach(js, k, 16, time.Now().Add(2*time.Minute), nil)
	fmt.Printf("created=%d failed=%d elapsed_s=%.1f rate=%.1f first500=%.1f last500=%.1f first1k=%.1f last1k=%.1f published=%d publish_s=%.1f capped=%v parallel=%d%s\n",
		k, failed.Load(), el.Seconds(), float64(made.Load())/el.Seconds(), first5, last5, first, last, published,
		time.Since(pubStart).Seconds(), k < n, parallel, codeSummary(&codes))
}

// blockRates gives the creates per second of the first and the last k
// blocks of 500 in blocks (whole when fewer were timed).
func blockRates(blocks []time.Duration, k int, whole float64) (float64, float64) {
	if len(blocks) < k {
		return whole, whole
	}
	var a, b time.Duration
	for i := 0; i < k; i++ {
		a += blocks[i]
		b += blocks[len(blocks)-1-i]
	}
	n := float64(500 * k)
	return n / a.Seconds(), n / b.Seconds()
}

// waitMeta waits up to a minute for the JetStream API to answer (a fresh
// cluster elects its meta leader first).
func waitMeta(js jetstream.JetStream) {
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			fatal("JetStream not ready: " + err.Error())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// createStream retries a create that timed out until deadline; other errors end it.
func createStream(js jetstream.JetStream, name string, deadline time.Time) error {
	cfg := jetstream.StreamConfig{Name: name, Subjects: []string{name}, Storage: jetstream.FileStorage,
		Replicas: replicas()}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := js.CreateStream(ctx, cfg)
		cancel()
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || time.Now().After(deadline) {
			return err
		}
	}
}

// publishEach publishes one message into each of the streams s0..s<n-1>
// from workers goroutines, retrying a stream until it accepts or deadline
// passes, and returns how many accepted; st (nil: none) counts the failed
// attempts by kind.
func publishEach(js jetstream.JetStream, n, workers int, deadline time.Time, st *pubFailures) int {
	items := make([]int, n)
	for i := range items {
		items[i] = i
	}
	var ok atomic.Int64
	parallel(items, workers, func(i int) {
		if publishUntil(js, scaleName(i), deadline, st) {
			ok.Add(1)
		}
	})
	return int(ok.Load())
}

// pubFailures counts failed publish attempts: no answer within the
// timeout, "no responders" (nats.go retried it twice already), any other.
type pubFailures struct {
	timeout, noResp, other atomic.Int64
	lastFirst              atomic.Int64 // when the last stream's first attempt was sent (Unix ns)
	since                  time.Time
	mu                     sync.Mutex
	samples                []string // the first timed-out and other failed attempts: stream@sent (s since)
}

func (f *pubFailures) count(name string, sent time.Time, err error) {
	if f != nil && !errors.Is(err, jetstream.ErrNoStreamResponse) {
		f.mu.Lock()
		if len(f.samples) < 8 {
			what := "timeout"
			var ae *jetstream.APIError
			if errors.As(err, &ae) {
				what = strconv.Itoa(int(ae.ErrorCode))
			} else if !errors.Is(err, context.DeadlineExceeded) {
				what = "other"
			}
			f.samples = append(f.samples, fmt.Sprintf("%s@%.2f:%s", name, sent.Sub(f.since).Seconds(), what))
		}
		f.mu.Unlock()
	}
	switch {
	case f == nil:
	case errors.Is(err, context.DeadlineExceeded):
		f.timeout.Add(1)
	case errors.Is(err, jetstream.ErrNoStreamResponse):
		f.noResp.Add(1)
	default:
		f.other.Add(1)
	}
}

func publishUntil(js jetstream.JetStream, name string, deadline time.Time, st *pubFailures) bool {
	for first := true; time.Now().Before(deadline); first = false {
		sent := time.Now()
		if first && st != nil {
			for v := st.lastFirst.Load(); v < sent.UnixNano() && !st.lastFirst.CompareAndSwap(v, sent.UnixNano()); v = st.lastFirst.Load() {
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := js.Publish(ctx, name, []byte("x"))
		cancel()
		if err == nil {
			return true
		}
		st.count(name, sent, err)
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// runStreamsUp publishes once into each of n streams through url until every
// one has accepted (or limit), and prints the time since sinceNs (Unix
// nanoseconds, the moment a server was killed) at which the last accepted,
// and the failed attempts by kind (timeouts: no answer in 2 s).
func runStreamsUp(url string, n int, sinceNs int64, limit time.Duration) {
	nc, js := connect(url)
	defer nc.Close()
	since := time.Unix(0, sinceNs)
	st := pubFailures{since: since}
	ok := publishEach(js, n, 64, time.Now().Add(limit), &st)
	fmt.Printf("accepted=%d of=%d up_s=%.2f last_first_sent_s=%.2f timeouts=%d no_responders=%d other_errors=%d failed_first=%s\n",
		ok, n, time.Since(since).Seconds(), time.Unix(0, st.lastFirst.Load()).Sub(since).Seconds(),
		st.timeout.Load(), st.noResp.Load(), st.other.Load(), strings.Join(st.samples, ","))
}

// runStreamsIn polls STREAM.INFO of n streams until server is the leader or
// a current replica of every one (or limit), and prints the time since
// sinceNs at which the last one got there, then the leader of each stream
// counted per server. An empty server only counts leaders. The time is
// late by up to one round of polls of the streams still pending: the last
// round's length is printed too.
func runStreamsIn(url string, n int, server string, sinceNs int64, limit time.Duration) {
	nc, js := connect(url)
	defer nc.Close()
	since := time.Unix(0, sinceNs)
	deadline := time.Now().Add(limit)
	leaders := make([]string, n)
	pending := make([]int, n)
	for i := range pending {
		pending[i] = i
	}
	var lastRound time.Duration
	for len(pending) > 0 && time.Now().Before(deadline) {
		roundStart := time.Now()
		var mu sync.Mutex
		var still []int
		parallel(pending, 16, func(i int) {
			in, leader := memberCurrent(js, scaleName(i), server)
			mu.Lock()
			defer mu.Unlock()
			leaders[i] = leader
			if !in {
				still = append(still, i)
			}
		})
		sort.Ints(still)
		pending = still
		lastRound = time.Since(roundStart)
		if len(pending) > 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	counts := map[string]int{}
	for _, l := range leaders {
		if l == "" {
			l = "none"
		}
		counts[l]++
	}
	var spread []string
	for k, v := range counts {
		spread = append(spread, k+":"+strconv.Itoa(v))
	}
	sort.Strings(spread)
	fmt.Printf("in=%d of=%d in_s=%.2f last_round_s=%.2f leaders=%s\n", n-len(pending), n, time.Since(since).Seconds(),
		lastRound.Seconds(), strings.Join(spread, ","))
}

// memberCurrent reports whether server leads the stream or is a current
// replica of it (always true for an empty server once the stream has a
// leader), and the stream's leader.
func memberCurrent(js jetstream.JetStream, name, server string) (bool, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, name)
	if err != nil {
		return false, ""
	}
	info := s.CachedInfo()
	if info.Cluster == nil || info.Cluster.Leader == "" {
		return false, ""
	}
	c := info.Cluster
	if server == "" || c.Leader == server {
		return true, c.Leader
	}
	for _, r := range c.Replicas {
		if r.Name == server {
			return r.Current && !r.Offline, c.Leader
		}
	}
	return false, c.Leader
}

// parallel calls f for each item from workers goroutines.
func parallel(items []int, workers int, f func(int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1) - 1)
				if k >= len(items) {
					return
				}
				f(items[k])
			}
		}()
	}
	wg.Wait()
}
