//go:build !race

package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestNoRaceJetStreamClusterWorkQueueChaos: while servers are killed (-9)
// and restarted, workers take every message of an R3 work-queue stream
// through a durable R3 pull consumer, acknowledging each with AckSync. At
// the end every acknowledged publish was processed at least once, no
// message came back after its AckSync was answered, the stream is empty,
// and every server, made leader in turn, reports the same stream and
// consumer state.
func TestNoRaceJetStreamClusterWorkQueueChaos(t *testing.T) {
	duration := 10 * time.Second
	if d, err := time.ParseDuration(os.Getenv("TERN_CHAOS_DURATION")); err == nil {
		duration = d
	}
	c := startChaosCluster(t, "")
	opts := []nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(50 * time.Millisecond)}
	nc := connectNATS(t, c.urls(), opts...)
	js, _ := jetstream.New(nc)
	waitFor(t, 20*time.Second, "the R3 work-queue stream", func() bool {
		_, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "WQ", Subjects: []string{"wq.>"},
			Replicas: 3, Retention: jetstream.WorkQueuePolicy})
		return err == nil
	})
	var cons jetstream.Consumer
	waitFor(t, 20*time.Second, "the R3 durable consumer", func() bool {
		var err error
		cons, err = js.CreateOrUpdateConsumer(ctx(t), "WQ", jetstream.ConsumerConfig{Durable: "workers",
			AckPolicy: jetstream.AckExplicitPolicy, AckWait: 2 * time.Second})
		return err == nil
	})
	_ = cons
	w := &wqLedger{published: map[string]bool{}, processed: map[string]int{}, answered: map[uint64]string{}}
	stop, done := make(chan struct{}), make(chan struct{})
	var pubs, workers sync.WaitGroup
	for p := range 2 {
		pubs.Add(1)
		go func() {
			defer pubs.Done()
			pc := connectNATS(t, c.urls(), opts...)
			pjs, _ := jetstream.New(pc)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				payload := fmt.Sprintf("p%d-%d", p, i)
				cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_, err := pjs.Publish(cctx, fmt.Sprintf("wq.%d", i%4), []byte(payload))
				cancel()
				if err == nil {
					w.mu.Lock()
					w.published[payload] = true
					w.mu.Unlock()
				}
			}
		}()
	}
	for k := range 3 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			wc := connectNATS(t, fmt.Sprintf("nats://127.0.0.1:%d", c.ports[k]), append(opts, nats.IgnoreDiscoveredServers())...)
			wjs, _ := jetstream.New(wc)
			for {
				select {
				case <-done:
					return
				default:
				}
				cctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				wcons, err := wjs.Consumer(cctx, "WQ", "workers")
				cancel()
				if err != nil {
					time.Sleep(50 * time.Millisecond) // no leader yet: back off
					continue
				}
				batch, err := wcons.Fetch(20, jetstream.FetchMaxWait(time.Second))
				if err != nil {
					continue
				}
				for m := range batch.Messages() {
					w.take(t, m, k)
				}
			}
		}()
	}
	deadline := time.Now().Add(duration)
	for time.Now().Before(deadline) {
		time.Sleep(1500 * time.Millisecond)
		c.bounce(rand.IntN(3), 500*time.Millisecond, syscall.SIGKILL)
	}
	close(stop)
	pubs.Wait()
	waitFor(t, 90*time.Second, "every acknowledged publish processed", func() bool {
		return len(w.missing()) == 0
	})
	waitFor(t, 30*time.Second, "an empty work queue", func() bool {
		info, err := js.Stream(ctx(t), "WQ")
		return err == nil && info.CachedInfo().State.Msgs == 0
	})
	close(done)
	workers.Wait()
	w.mu.Lock()
	t.Logf("%d acknowledged publishes, %d processed payloads, %d AckSyncs answered, %d redeliveries",
		len(w.published), len(w.processed), len(w.answered), w.redelivered)
	bad := w.violations
	w.mu.Unlock()
	if len(bad) > 0 {
		t.Fatalf("%d messages came back after their AckSync was answered, e.g. %s", len(bad), bad[0])
	}
	agreeAcrossLeaders(t, nc, "WQ", "workers", len(c.ports))
}

// wqLedger is what publishers and workers were told.
type wqLedger struct {
	mu          sync.Mutex
	published   map[string]bool   // payloads whose publish was acknowledged
	processed   map[string]int    // payload → deliveries seen
	answered    map[uint64]string // stream seq → payload, AckSync answered
	redelivered int
	violations  []string
	seen        map[uint64]string
}

func (w *wqLedger) take(t *testing.T, m jetstream.Msg, worker int) {
	md, err := m.Metadata()
	if err != nil {
		t.Errorf("a delivery without metadata: %v", err)
		return
	}
	payload := string(m.Data())
	w.mu.Lock()
	where := fmt.Sprintf("worker %d at %s reply %s", worker, time.Now().Format("15:04:05.000"), m.Reply())
	if w.seen == nil {
		w.seen = map[uint64]string{}
	}
	prev := w.seen[md.Sequence.Stream]
	w.seen[md.Sequence.Stream] = where
	if p, ok := w.answered[md.Sequence.Stream]; ok {
		p += " first seen " + prev + "; again " + where
		w.violations = append(w.violations, fmt.Sprintf("stream seq %d (%q when its AckSync was answered) delivered again as %q, consumer seq %d, count %d",
			md.Sequence.Stream, p, payload, md.Sequence.Consumer, md.NumDelivered))
	}
	if w.processed[payload] > 0 {
		w.redelivered++
	}
	w.processed[payload]++
	w.mu.Unlock()
	cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	err = m.DoubleAck(cctx)
	cancel()
	if err == nil {
		w.mu.Lock()
		w.answered[md.Sequence.Stream] = payload
		w.mu.Unlock()
	}
}

func (w *wqLedger) missing() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for p := range w.published {
		if w.processed[p] == 0 {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// agreeAcrossLeaders makes each of n servers lead the stream in turn and
// checks that each reports the same stream state and consumer numbers
// (values derived from the applied state, so identical on every replica).
func agreeAcrossLeaders(t *testing.T, nc *nats.Conn, stream, consumer string, n int) {
	t.Helper()
	js, _ := jetstream.New(nc)
	type view struct {
		msgs, first, last       uint64
		delivered, floor        uint64
		pending, ackPending, rd uint64
	}
	read := func() (string, view, bool) {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		st, err := js.Stream(cctx, stream)
		if err != nil || st.CachedInfo().Cluster == nil || st.CachedInfo().Cluster.Leader == "" {
			return "", view{}, false
		}
		ci, err := st.Consumer(cctx, consumer)
		if err != nil {
			return "", view{}, false
		}
		si, info := st.CachedInfo(), ci.CachedInfo()
		return si.Cluster.Leader, view{si.State.Msgs, si.State.FirstSeq, si.State.LastSeq,
			info.Delivered.Stream, info.AckFloor.Stream, info.NumPending, uint64(info.NumAckPending), uint64(info.NumRedelivered)}, true
	}
	seen := map[string]view{}
	deadline := time.Now().Add(60 * time.Second)
	for len(seen) < n && time.Now().Before(deadline) {
		name, v, ok := read()
		if !ok {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		seen[name] = v
		if _, err := nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+stream, nil, 2*time.Second); err != nil {
			continue
		}
		for time.Now().Before(deadline) {
			if next, _, ok := read(); ok && next != name {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if len(seen) < n {
		t.Fatalf("not every server led %s: %v", stream, seen)
	}
	var names []string
	for name := range seen {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names[1:] {
		if seen[name] != seen[names[0]] {
			t.Fatalf("replicas differ: %s reports %+v, %s %+v", names[0], seen[names[0]], name, seen[name])
		}
	}
	t.Logf("%s: every leader reports %+v (%s)", stream, seen[names[0]], strings.Join(names, ", "))
}
