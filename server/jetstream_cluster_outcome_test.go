package server

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// outcomes records the answers to requests named by a key (a payload, a
// consumer name): the stored sequence or success, or the error code.
type outcomes struct {
	mu     sync.Mutex
	ok     map[string]uint64
	failed map[string]int
	last   time.Time // of the last answer
}

func newOutcomes() *outcomes {
	return &outcomes{ok: map[string]uint64{}, failed: map[string]int{}}
}

func (o *outcomes) add(key string, seq uint64, code int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.last = time.Now()
	if _, dup := o.ok[key]; dup {
		return
	}
	if _, dup := o.failed[key]; dup {
		return
	}
	if code != 0 {
		o.failed[key] = code
	} else {
		o.ok[key] = seq
	}
}

// quiet reports whether no answer came for d.
func (o *outcomes) quiet(d time.Duration) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return time.Since(o.last) > d
}

// outcomePublisher publishes unique payloads through nc in bursts without
// waiting for the answers, and records each answer, until stop.
func outcomePublisher(t *testing.T, nc *nats.Conn, id int, out *outcomes, stop chan struct{}) {
	inbox := nats.NewInbox()
	if _, err := nc.Subscribe(inbox+".*", func(m *nats.Msg) {
		payload := strings.TrimPrefix(m.Subject, inbox+".")
		if m.Header.Get("Status") == "503" { // no responders: nobody received it
			out.add(payload, 0, 503)
			return
		}
		var ack casAck
		if json.Unmarshal(m.Data, &ack) != nil {
			t.Errorf("publish %s: answer %q", payload, m.Data)
			return
		}
		switch {
		case ack.Error != nil:
			out.add(payload, 0, int(ack.Error.ErrCode))
		case ack.Seq > 0:
			out.add(payload, ack.Seq, 0)
		}
	}); err != nil {
		t.Error(err)
		return
	}
	_ = nc.Flush()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for n := 0; ; {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		for range 10 {
			p := fmt.Sprintf("p%d-%d", id, n)
			n++
			_ = nc.PublishMsg(&nats.Msg{Subject: "out.x", Reply: inbox + "." + p, Data: []byte(p)})
		}
	}
}

// outcomeConsumerCreator creates durable consumers d<id>-<n> one after
// another through nc, recording each answer (a timeout records nothing).
func outcomeConsumerCreator(nc *nats.Conn, id int, out *outcomes, stop chan struct{}) {
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		name := fmt.Sprintf("d%d-%d", id, n)
		body := `{"stream_name":"OUT","config":{"durable_name":"` + name + `","ack_policy":"explicit"}}`
		resp, err := nc.Request("$JS.API.CONSUMER.DURABLE.CREATE.OUT."+name, []byte(body), 2*time.Second)
		if err != nil {
			continue
		}
		var r struct {
			Error *ApiError `json:"error"`
		}
		if json.Unmarshal(resp.Data, &r) != nil {
			continue
		}
		if r.Error != nil {
			out.add(name, 0, int(r.Error.ErrCode))
		} else {
			out.add(name, 1, 0)
		}
	}
}

// readStreamPayloads reads every message of the stream and returns the
// sequences each payload is stored at.
func readStreamPayloads(t *testing.T, js jetstream.JetStream, name string) (map[string][]uint64, jetstream.Stream, error) {
	st, err := js.Stream(ctx(t), name)
	if err != nil {
		return nil, nil, err
	}
	stored := map[string][]uint64{}
	info := st.CachedInfo()
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(ctx(t), seq)
		if err != nil {
			return nil, nil, fmt.Errorf("message %d: %w", seq, err)
		}
		stored[string(m.Data)] = append(stored[string(m.Data)], seq)
	}
	return stored, st, nil
}

// streamLeaderVia is the leader STREAM.INFO names ("": no answer, no
// leader).
func streamLeaderVia(nc *nats.Conn, stream string) string {
	resp, err := nc.Request("$JS.API.STREAM.INFO."+stream, nil, time.Second)
	if err != nil {
		return ""
	}
	var r struct {
		Cluster *struct {
			Leader string `json:"leader"`
		} `json:"cluster"`
	}
	if json.Unmarshal(resp.Data, &r) != nil || r.Cluster == nil {
		return ""
	}
	return r.Cluster.Leader
}

// TestJetStreamClusterNoFalseRejectionOnLeaderChange publishes to an R3
// stream and creates consumers through every server while the stream's
// leader is made to step down again and again, and records every answer.
// Afterwards every publish answered with an error must be absent from the
// stream and every acknowledged one present at its sequence; every
// consumer whose create was answered with an error must not exist, every
// created one must, and no publish may be stored twice. Before, a leader
// that had stepped down answered the requests it still received 10008
// "temporarily unavailable" although the new leader, which had received
// them too, applied them; and a publish sent to both the old and the new
// leader's interest was stored twice (issue 19, jetstream_routes.go).
func TestJetStreamClusterNoFalseRejectionOnLeaderChange(t *testing.T) {
	c := runJSCluster(t, 3)
	nc0, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "OUT", Subjects: []string{"out.>"}, Replicas: 3})
	pubs, cons := newOutcomes(), newOutcomes()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, s := range c.servers {
		nc, _ := jsClient(t, s)
		wg.Add(2)
		go func() { defer wg.Done(); outcomePublisher(t, nc, i, pubs, stop) }()
		go func() { defer wg.Done(); outcomeConsumerCreator(nc, i, cons, stop) }()
	}
	leader := ""
	waitFor(t, 20*time.Second, "the stream's leader", func() bool { leader = streamLeaderVia(nc0, "OUT"); return leader != "" })
	for range 8 {
		time.Sleep(200 * time.Millisecond) // let publishes pile up under this leader
		old := leader
		waitFor(t, 30*time.Second, "a new leader after "+old, func() bool {
			_, _ = nc0.Request("$JS.API.STREAM.LEADER.STEPDOWN.OUT", nil, 2*time.Second)
			for range 20 { // a transfer takes a round or two
				if leader = streamLeaderVia(nc0, "OUT"); leader != "" && leader != old {
					return true
				}
				time.Sleep(100 * time.Millisecond)
			}
			return false
		})
	}
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()
	waitFor(t, 20*time.Second, "the last answers", func() bool { return pubs.quiet(time.Second) && cons.quiet(time.Second) })

	// Read the stream once a leader answers (after the last step down an
	// election may still be on, and a read is answered 10008 meanwhile).
	var stored map[string][]uint64
	var st jetstream.Stream
	lastErr := ""
	waitFor(t, 20*time.Second, "the stream's messages", func() bool {
		var err error
		if stored, st, err = readStreamPayloads(t, js, "OUT"); err != nil && err.Error() != lastErr {
			lastErr = err.Error()
			t.Logf("reading the stream: %v", err)
		}
		return err == nil
	})
	dups := 0
	for p, seqs := range stored {
		if len(seqs) > 1 {
			if dups++; dups <= 3 {
				t.Errorf("publish %s is stored %d times, at %v", p, len(seqs), seqs)
			}
		}
	}
	pubs.mu.Lock()
	defer pubs.mu.Unlock()
	for p, code := range pubs.failed {
		if seqs, ok := stored[p]; ok {
			t.Errorf("publish %s was answered with error %d but is stored at %v", p, code, seqs)
		}
	}
	for p, seq := range pubs.ok {
		if !slices.Contains(stored[p], seq) {
			t.Errorf("publish %s was acknowledged at %d but is stored at %v", p, seq, stored[p])
		}
	}
	names := map[string]bool{}
	for name := range st.ConsumerNames(ctx(t)).Name() {
		names[name] = true
	}
	cons.mu.Lock()
	defer cons.mu.Unlock()
	for name, code := range cons.failed {
		if names[name] {
			t.Errorf("consumer create %s was answered with error %d but the consumer exists", name, code)
		}
	}
	for name := range cons.ok {
		if !names[name] {
			t.Errorf("consumer %s was created but does not exist", name)
		}
	}
	codes := map[int]int{}
	for _, code := range pubs.failed {
		codes[code]++
	}
	for _, code := range cons.failed {
		codes[-code]++
	}
	t.Logf("error codes (negative: consumer creates): %v", codes)
	t.Logf("publishes: %d stored (%d of them more than once), %d acknowledged, %d answered with an error; consumers: %d exist, %d created, %d answered with an error",
		len(stored), dups, len(pubs.ok), len(pubs.failed), len(names), len(cons.ok), len(cons.failed))
}
