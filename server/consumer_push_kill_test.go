//go:build !race

package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	cstate "github.com/nats-io/nats-server/v2/internal/consumer"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestNoRaceJetStreamClusterPushConsumerKill9: a durable push consumer of
// an R3 stream with explicit acks delivers to a deliver subject; its
// subscriber acknowledges every message with an AckSync. The stream's
// leader is killed (-9) mid-stream, twice, and restarted. At the end
// every acknowledged publish was processed at least once, no delivery was
// received twice, no message came back after its AckSync was answered
// (consumer sequences against CONSUMER.INFO read after the answer, as the
// work-queue chaos test), and every server, made leader in turn, reports
// the same stream and consumer numbers.
func TestNoRaceJetStreamClusterPushConsumerKill9(t *testing.T) {
	c := startChaosCluster(t, "")
	opts := []nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(50 * time.Millisecond)}
	nc := connectNATS(t, c.urls(), opts...)
	js, _ := jetstream.New(nc)
	waitFor(t, 20*time.Second, "the R3 stream", func() bool {
		_, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "PQ", Subjects: []string{"pq.>"}, Replicas: 3})
		return err == nil
	})
	waitFor(t, 20*time.Second, "the R3 durable push consumer", func() bool {
		_, err := js.CreateOrUpdatePushConsumer(ctx(t), "PQ", jetstream.ConsumerConfig{Durable: "push",
			DeliverSubject: "push.in", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 2 * time.Second, MaxAckPending: 200})
		return err == nil
	})
	w := &wqLedger{published: map[string]bool{}, processed: map[string]int{}, answered: map[uint64]time.Time{}, byCSeq: map[uint64]int{}}
	// The subscriber: its own connection, acks answered on it.
	sc := connectNATS(t, c.urls(), opts...)
	msgs := make(chan *nats.Msg, 4096)
	sub, err := sc.ChanSubscribe("push.in", msgs)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	done := make(chan struct{})
	var workers sync.WaitGroup
	workers.Add(1)
	go func() {
		defer workers.Done()
		for {
			select {
			case <-done:
				return
			case m := <-msgs:
				w.takePush(t, sc, m)
			}
		}
	}()
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		pollConsumer(w, js, "PQ", "push", done)
	}()
	const total = 3000
	var pubs sync.WaitGroup
	pubs.Add(1)
	go func() {
		defer pubs.Done()
		pc := connectNATS(t, c.urls(), opts...)
		pjs, _ := jetstream.New(pc)
		for i := 0; i < total; i++ {
			payload := fmt.Sprintf("m%d", i)
			for attempt := 0; attempt < 50; attempt++ { // a publish lost with the leader is retried (at least once)
				cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_, err := pjs.Publish(cctx, fmt.Sprintf("pq.%d", i%8), []byte(payload))
				cancel()
				if err == nil {
					w.mu.Lock()
					w.published[payload] = true
					w.mu.Unlock()
					break
				}
			}
		}
	}()
	for kill := 1; kill <= 2; kill++ {
		waitFor(t, 60*time.Second, fmt.Sprintf("%d deliveries before kill %d", kill*total/3, kill), func() bool {
			w.mu.Lock()
			defer w.mu.Unlock()
			return len(w.deliveries) >= kill*total/3
		})
		i := c.awaitStreamLeader(t, "PQ")
		t.Logf("kill -9 of N%d, the leader of PQ, after %d deliveries", i+1, len(w.deliveries))
		c.bounce(i, 300*time.Millisecond, syscall.SIGKILL)
	}
	pubs.Wait()
	waitFor(t, 90*time.Second, "every acknowledged publish processed", func() bool {
		return len(w.missing()) == 0
	})
	var last string
	ok := pollUntil(30*time.Second, func() bool {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		ci, err := anyConsumerInfo(cctx, js, "PQ", "push")
		if err != nil {
			last = err.Error()
			return false
		}
		last = fmt.Sprintf("%s bound %v leader %v", ccNumbers(ci), ci.PushBound, ci.Cluster)
		return ci.NumAckPending == 0 && ci.NumPending == 0
	})
	if !ok {
		t.Fatalf("still unacknowledged or undelivered: %s", last)
	}
	close(done)
	workers.Wait()
	<-polled
	w.verdict(t)
	agreeAcrossLeaders(t, nc, "PQ", "push", len(c.ports))
}

// takePush records a push delivery and acknowledges it with an AckSync
// (+ACK as a request; the empty answer means the ack was applied).
func (w *wqLedger) takePush(t *testing.T, nc *nats.Conn, m *nats.Msg) {
	a, ok := cstate.ParseAckSubject(m.Reply)
	if !ok {
		if !strings.HasPrefix(m.Reply, "$JS.FC.") && m.Header.Get("Status") == "" {
			t.Errorf("a delivery without an ack subject: %q", m.Reply)
		}
		if m.Reply != "" { // a flow control request
			_ = m.Respond(nil)
		}
		return
	}
	payload := string(m.Data)
	d := wqDelivery{sseq: a.SSeq, cseq: a.CSeq, at: time.Now(), reply: m.Reply}
	w.record(d, payload)
	if _, err := nc.Request(m.Reply, []byte("+ACK"), 2*time.Second); err == nil {
		w.acked(d.sseq)
	}
}

// pollConsumer reads a consumer's delivered sequence until done closes.
func pollConsumer(w *wqLedger, js jetstream.JetStream, stream, name string, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-time.After(100 * time.Millisecond):
		}
		sent := time.Now()
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		ci, err := anyConsumerInfo(cctx, js, stream, name)
		cancel()
		if err != nil {
			continue
		}
		w.mu.Lock()
		w.polls = append(w.polls, wqPoll{sent: sent, delivered: ci.Delivered.Consumer})
		w.mu.Unlock()
	}
}

// awaitStreamLeader is the index of the server leading stream, waiting
// for one (chaosCluster.streamLeader asks once).
func (c *chaosCluster) awaitStreamLeader(t *testing.T, stream string) int {
	t.Helper()
	idx := -1
	waitFor(t, 30*time.Second, "a leader of "+stream, func() bool {
		idx = c.streamLeader(stream)
		return idx >= 0
	})
	return idx
}

// anyConsumerInfo is CONSUMER.INFO of a pull or a push consumer (nats.go
// has one call for each).
func anyConsumerInfo(ctx context.Context, js jetstream.JetStream, stream, name string) (*jetstream.ConsumerInfo, error) {
	if c, err := js.Consumer(ctx, stream, name); err == nil {
		return c.CachedInfo(), nil
	} else if !errors.Is(err, jetstream.ErrNotPullConsumer) {
		return nil, err
	}
	c, err := js.PushConsumer(ctx, stream, name)
	if err != nil {
		return nil, err
	}
	return c.CachedInfo(), nil
}
