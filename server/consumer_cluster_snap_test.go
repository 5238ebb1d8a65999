package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A replica that was away catches up from a snapshot (the full form, as
// a leader sends it) and has the consumer exactly as the others; after a
// restart of every server (each restoring its own linked snapshot and
// replaying its log) the consumer reports the same numbers.
func TestJetStreamClusterConsumerInSnapshots(t *testing.T) {
	setForTest(t, &snapshotEvery, 100)
	setForTest(t, &snapshotKeepFactor, 0) // the log keeps only 100 entries below a snapshot
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	st := createStream(t, js, jetstream.StreamConfig{Name: "CC", Subjects: []string{"cc.>"}, Replicas: 3, Storage: jetstream.FileStorage})
	cons, err := js.CreateOrUpdateConsumer(ctx(t), "CC", jetstream.ConsumerConfig{Durable: "S", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	down := c.stopFollower(st.CachedInfo().Cluster.Leader)
	for i := 1; i <= 300; i++ {
		if _, err := js.Publish(ctx(t), fmt.Sprintf("cc.%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	for round := 0; round < 15; round++ { // 150 delivered, every other one acked
		batch, err := cons.Fetch(10, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		for m := range batch.Messages() {
			if i%2 == 0 {
				if err := m.DoubleAck(ctx(t)); err != nil {
					t.Fatal(err)
				}
			}
			i++
		}
		if i != 10 {
			t.Fatalf("round %d: %d messages (%v)", round, i, batch.Error())
		}
	}
	want := ccNumbers(ccInfo(t, js, "S"))
	if want != "delivered 150/150 ack_floor 1/1 ack_pending 75 pending 150 redelivered 0" {
		t.Fatalf("consumer: %s", want)
	}
	c.servers[down] = runServer(t, c.opts[down])
	checkConsumersAgree(t, c, "CC")
	for _, m := range c.replicas("CC") {
		if m.jsa.js.srv == c.servers[down] {
			m.mu.Lock()
			received := m.received
			m.mu.Unlock()
			if received == 0 {
				t.Fatal("the restarted replica caught up without installing a snapshot")
			}
		}
	}
	c.restartAll(t)
	_, js = jsClient(t, c.servers[0])
	if got := ccNumbers(ccInfo(t, js, "S")); got != want {
		t.Fatalf("after restarting every server: %s, want %s", got, want)
	}
	checkConsumersAgree(t, c, "CC")
}
