package server

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// advScenario makes a consumer go through create, ack (sampled), nak,
// term, max deliveries and delete, and returns each advisory as
// "subject type key,key,..." plus the values that do not vary.
func advScenario(t *testing.T, nc *nats.Conn) []string {
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := nc.SubscribeSync("$JS.EVENT.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "A", Subjects: []string{"a.>"}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		if _, err := js.Publish(ctx(t), "a.x", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	c, err := js.CreateOrUpdateConsumer(ctx(t), "A", jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckExplicitPolicy,
		SampleFrequency: "100%", MaxDeliver: 2, AckWait: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Fetch(4, jetstream.FetchMaxWait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var ms []jetstream.Msg
	for m := range b.Messages() {
		ms = append(ms, m)
	}
	if len(ms) != 4 {
		t.Fatalf("fetched %d", len(ms))
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	next := func() string {
		m, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("waiting for an advisory after %v: %v", got, err)
		}
		var v map[string]any
		if err := json.Unmarshal(m.Data, &v); err != nil {
			t.Fatal(err)
		}
		var keys, vals []string
		for k, x := range v {
			keys = append(keys, k)
			if k != "id" && k != "timestamp" && k != "ack_time" {
				vals = append(vals, fmt.Sprintf("%s=%v", k, x))
			}
		}
		slices.Sort(keys)
		slices.Sort(vals)
		for _, k := range []string{"id", "timestamp"} {
			if s, _ := v[k].(string); s == "" {
				t.Fatalf("%s: no %s in %s", m.Subject, k, m.Data)
			}
		}
		return m.Subject + " " + strings.Join(keys, ",") + " " + strings.Join(vals, " ")
	}
	skipAPI := func() string { // the reference also sends API audit advisories
		for {
			s := next()
			if !strings.HasPrefix(s, "$JS.EVENT.ADVISORY.API") && !strings.HasPrefix(s, "$JS.EVENT.ADVISORY.STREAM") {
				return s
			}
		}
	}
	got = append(got, skipAPI()) // created
	must(ms[0].DoubleAck(ctx(t)))
	got = append(got, skipAPI()) // ack metric
	must(ms[1].Nak())
	got = append(got, skipAPI()) // naked
	must(ms[2].TermWithReason("bad input"))
	got = append(got, skipAPI()) // terminated
	// ms[1] (naked) and ms[3] (never acked) are delivered a second time,
	// and reach max_deliver (2) once that delivery's ack wait passes.
	fetch := func(n int) int {
		b, err := c.Fetch(n, jetstream.FetchMaxWait(1500*time.Millisecond))
		must(err)
		k := 0
		for range b.Messages() {
			k++
		}
		return k
	}
	if k := fetch(2); k != 2 {
		t.Fatalf("redelivered %d", k)
	}
	if k := fetch(1); k != 0 {
		t.Fatalf("delivered past max_deliver: %d", k)
	}
	for i := 0; i < 2; i++ {
		got = append(got, skipAPI())
	}
	must(js.DeleteConsumer(ctx(t), "A", "D"))
	got = append(got, skipAPI())
	return got
}

func TestConsumerAdvisories(t *testing.T) {
	s := runJSServer(t)
	nc := connectNATS(t, s.ClientURL())
	got := advScenario(t, nc)
	want, err := os.ReadFile("testdata/consumer_advisories.txt")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got[4 : len(got)-1]) // max deliveries come in timer order
	if strings.Join(got, "\n")+"\n" != string(want) {
		t.Fatalf("advisories differ from nats-server's:\n--- got\n%s\n--- want\n%s", strings.Join(got, "\n"), want)
	}
}

func TestConsumerAdvisoriesRecord(t *testing.T) {
	bin := os.Getenv("TERN_REF_NATS_SERVER")
	if bin == "" {
		t.Skip("set TERN_REF_NATS_SERVER to a nats-server v2.15.2 binary to record")
	}
	got := advScenario(t, ccStartRef(t, bin, ""))
	slices.Sort(got[4 : len(got)-1])
	if err := os.WriteFile("testdata/consumer_advisories.txt", []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Deleting a stream deletes its consumers with an advisory each, as
// nats-server does.
func TestConsumerDeletedWithStreamAdvisory(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	consumerStream(t, js, jetstream.MemoryStorage, 1)
	if _, err := js.CreateOrUpdateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "D"}); err != nil {
		t.Fatal(err)
	}
	sub, err := nc.SubscribeSync(JSAdvisoryConsumerDeletedPre + ".S.D")
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(ctx(t), "S"); err != nil {
		t.Fatal(err)
	}
	m, err := sub.NextMsg(3 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var a JSConsumerActionAdvisory
	if err := json.Unmarshal(m.Data, &a); err != nil || a.Action != DeleteEvent || a.Stream != "S" || a.Consumer != "D" {
		t.Fatalf("advisory %s: %v", m.Data, err)
	}
}
