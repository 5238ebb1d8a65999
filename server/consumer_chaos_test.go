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
	w := &wqLedger{published: map[string]bool{}, processed: map[string]int{}, answered: map[uint64]time.Time{}, byCSeq: map[uint64]int{}}
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
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		w.poll(js, done)
	}()
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
	<-polled
	w.verdict(t)
	agreeAcrossLeaders(t, nc, "WQ", "workers", len(c.ports))
}

// verdict fails the test when a delivery was received twice or a message
// came back after its AckSync was answered; it logs the tally.
func (w *wqLedger) verdict(t *testing.T) {
	t.Helper()
	came := w.cameBack()
	w.mu.Lock()
	t.Logf("%d acknowledged publishes, %d processed payloads, %d AckSyncs answered, %d redeliveries",
		len(w.published), len(w.processed), len(w.answered), w.redelivered)
	dup := w.violations
	w.mu.Unlock()
	for i, v := range append(dup, came...) {
		if i < 10 {
			t.Log(v)
		}
	}
	if len(dup) > 0 || len(came) > 0 {
		t.Fatalf("%d deliveries received twice, %d messages came back after their AckSync was answered", len(dup), len(came))
	}
}

// wqLedger is what publishers and workers were told.
//
// A delivery a worker takes after an AckSync of its message was answered
// is not by itself a message that came back: it may have been sent
// before the ack was applied and sat in the worker's batch while the
// worker waited on another AckSync (a redelivery after the ack wait went
// meanwhile to another worker, which acknowledged it). What proves a
// delivery was made after the ack is its consumer sequence: consumer
// sequences are assigned in log order, so a delivery whose consumer
// sequence is above the consumer's delivered sequence read from the
// leader after the answer (polls) was made after the ack was applied.
// And no delivery (one consumer sequence) may be received twice.
type wqLedger struct {
	mu          sync.Mutex
	published   map[string]bool      // payloads whose publish was acknowledged
	processed   map[string]int       // payload → deliveries seen
	answered    map[uint64]time.Time // stream seq → when its first AckSync was answered
	redelivered int
	violations  []string
	deliveries  []wqDelivery
	byCSeq      map[uint64]int // consumer seq → index in deliveries
	polls       []wqPoll       // consumer info read while the workers run, in order
}

type wqDelivery struct {
	sseq, cseq uint64
	worker     int
	at         time.Time
	reply      string
}

func (d wqDelivery) String() string {
	return fmt.Sprintf("worker %d took %s at %s", d.worker, d.reply, d.at.Format("15:04:05.000"))
}

// wqPoll is the consumer's delivered sequence read by a CONSUMER.INFO
// request sent at sent.
type wqPoll struct {
	sent      time.Time
	delivered uint64
}

func (w *wqLedger) take(t *testing.T, m jetstream.Msg, worker int) {
	md, err := m.Metadata()
	if err != nil {
		t.Errorf("a delivery without metadata: %v", err)
		return
	}
	payload := string(m.Data())
	d := wqDelivery{sseq: md.Sequence.Stream, cseq: md.Sequence.Consumer, worker: worker, at: time.Now(), reply: m.Reply()}
	w.record(d, payload)
	cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	err = m.DoubleAck(cctx)
	cancel()
	if err == nil {
		w.acked(d.sseq)
	}
}

// record notes delivery d of payload: a consumer sequence seen twice is a
// violation, a payload seen before a redelivery.
func (w *wqLedger) record(d wqDelivery, payload string) {
	w.mu.Lock()
	if i, ok := w.byCSeq[d.cseq]; ok {
		w.violations = append(w.violations, fmt.Sprintf("consumer seq %d received twice: %s; %s", d.cseq, w.deliveries[i], d))
	}
	w.byCSeq[d.cseq] = len(w.deliveries)
	w.deliveries = append(w.deliveries, d)
	if w.processed[payload] > 0 {
		w.redelivered++
	}
	w.processed[payload]++
	w.mu.Unlock()
}

// acked notes when the ack of stream sequence sseq was first answered.
func (w *wqLedger) acked(sseq uint64) {
	w.mu.Lock()
	if _, ok := w.answered[sseq]; !ok {
		w.answered[sseq] = time.Now()
	}
	w.mu.Unlock()
}

// poll reads the consumer's delivered sequence until done is closed.
func (w *wqLedger) poll(js jetstream.JetStream, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-time.After(100 * time.Millisecond):
		}
		sent := time.Now()
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		cons, err := js.Consumer(cctx, "WQ", "workers")
		cancel()
		if err != nil {
			continue
		}
		w.mu.Lock()
		w.polls = append(w.polls, wqPoll{sent: sent, delivered: cons.CachedInfo().Delivered.Consumer})
		w.mu.Unlock()
	}
}

// cameBack lists the deliveries made after an AckSync of their message
// was answered: consumer sequence above what the first poll sent after
// the answer read.
func (w *wqLedger) cameBack() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, d := range w.deliveries {
		at, ok := w.answered[d.sseq]
		if !ok {
			continue
		}
		k := sort.Search(len(w.polls), func(i int) bool { return w.polls[i].sent.After(at) })
		if k == len(w.polls) || d.cseq <= w.polls[k].delivered {
			continue
		}
		var hist []string
		for _, e := range w.deliveries {
			if e.sseq == d.sseq {
				hist = append(hist, e.String())
			}
		}
		out = append(out, fmt.Sprintf("stream seq %d: AckSync answered at %s, consumer delivered seq %d read after it, yet delivered again as consumer seq %d (deliveries: %s)",
			d.sseq, at.Format("15:04:05.000"), w.polls[k].delivered, d.cseq, strings.Join(hist, "; ")))
	}
	return out
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
// checks that every leader reports the same stream and consumer numbers.
func agreeAcrossLeaders(t *testing.T, nc *nats.Conn, stream, consumer string, n int) {
	t.Helper()
	type view struct {
		msgs, first, last       uint64
		delivered, floor        uint64
		pending, ackPending, rd uint64
	}
	seen := viewUnderEachLeader(t, nc, stream, n, 60*time.Second, func(ctx context.Context, js jetstream.JetStream) (string, view, bool) {
		st, err := js.Stream(ctx, stream)
		if err != nil || st.CachedInfo().Cluster == nil || st.CachedInfo().Cluster.Leader == "" {
			return "", view{}, false
		}
		info, err := anyConsumerInfo(ctx, js, stream, consumer) // pull or push
		if err != nil {
			return "", view{}, false
		}
		si := st.CachedInfo()
		return si.Cluster.Leader, view{si.State.Msgs, si.State.FirstSeq, si.State.LastSeq,
			info.Delivered.Stream, info.AckFloor.Stream, info.NumPending, uint64(info.NumAckPending), uint64(info.NumRedelivered)}, true
	})
	names := sameUnderEachLeader(t, stream, seen)
	t.Logf("%s: every leader reports %+v (%s)", stream, seen[names[0]], strings.Join(names, ", "))
}
