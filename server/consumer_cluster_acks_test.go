package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// rawAcks sends an ack (empty body) to each subject in one write on a
// connection of its own to s, and returns once s answered the PING
// after them (every ack parsed, the read's acks proposed).
func rawAcks(t *testing.T, s *Server, subjects []string) {
	t.Helper()
	pubs := make([][2]string, len(subjects))
	for i, subj := range subjects {
		pubs[i] = [2]string{subj, ""}
	}
	rawPubs(t, s, pubs)
}

// rawPubs is rawAcks with a body for each subject ({subject, body}).
func rawPubs(t *testing.T, s *Server, pubs [][2]string) {
	t.Helper()
	conn, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var b strings.Builder
	b.WriteString("CONNECT {\"verbose\":false,\"pedantic\":false}\r\n")
	for _, p := range pubs {
		fmt.Fprintf(&b, "PUB %s %d\r\n%s\r\n", p[0], len(p[1]), p[1])
	}
	b.WriteString("PING\r\n")
	if _, err := conn.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("waiting for PONG: %v", err)
		}
		if strings.HasPrefix(line, "PONG") {
			return
		}
	}
}

// TestJetStreamClusterConsumerAckBatch: the acks of one client read to
// the stream leader go in one log entry (the applied index moves by far
// fewer entries than acks), every replica applies them alike, and after
// a leader change none of them comes back: once the ack wait passes the
// new leader redelivers exactly the messages not acked.
func TestJetStreamClusterConsumerAckBatch(t *testing.T) {
	c, nc, js, leader := ccSetup(t, 100)
	cons, err := js.CreateOrUpdateConsumer(ctx(t), "CC", jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(100, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var acks []string
	for m := range batch.Messages() {
		acks = append(acks, m.Reply())
	}
	if len(acks) != 100 {
		t.Fatalf("fetched %d messages (%v)", len(acks), batch.Error())
	}
	ls := c.serverNamed(leader)
	var mset *stream
	for _, m := range c.replicas("CC") {
		if m.jsa.js.srv == ls {
			mset = m
		}
	}
	mset.mu.Lock()
	before := mset.lastIndex
	mset.mu.Unlock()
	rawAcks(t, ls, acks[:60])
	waitFor(t, 10*time.Second, "the acks applied", func() bool {
		ci := ccInfo(t, js, "D")
		return ci.AckFloor.Stream == 60
	})
	mset.mu.Lock()
	entries := mset.lastIndex - before
	mset.mu.Unlock()
	if entries >= 30 {
		t.Fatalf("60 acks of one read took %d log entries", entries)
	}
	want := "delivered 100/100 ack_floor 60/60 ack_pending 40 pending 0 redelivered 0"
	if got := ccNumbers(ccInfo(t, js, "D")); got != want {
		t.Fatalf("after the acks: %s, want %s", got, want)
	}
	checkConsumersAgree(t, c, "CC")

	stepdownStream(t, nc, "CC")
	awaitNewLeader(t, c, nc, "CC", leader)
	if got := ccNumbers(ccInfo(t, js, "D")); got != want {
		t.Fatalf("after the stepdown: %s, want %s", got, want)
	}
	seen := map[string]bool{}
	for deadline := time.Now().Add(20 * time.Second); len(seen) < 40 && time.Now().Before(deadline); {
		batch, err := cons.Fetch(40-len(seen), jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			continue // the new leader may not serve yet
		}
		for m := range batch.Messages() {
			var n int
			fmt.Sscanf(m.Subject(), "cc.%d", &n)
			if n <= 60 {
				t.Fatalf("acknowledged message %s came back", m.Subject())
			}
			seen[m.Subject()] = true
			if err := m.DoubleAck(ctx(t)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(seen) != 40 {
		t.Fatalf("%d of the 40 messages not acked came back", len(seen))
	}
	// A redelivery acked later than its ack wait (a slow run) comes back
	// once more: the consumer sequences past 140 are not fixed.
	ci := ccInfo(t, js, "D")
	if ci.AckFloor.Stream != 100 || ci.AckFloor.Consumer != ci.Delivered.Consumer || ci.NumAckPending != 0 || ci.NumPending != 0 {
		t.Fatalf("after acking the redeliveries: %s", ccNumbers(ci))
	}
	checkConsumersAgree(t, c, "CC")
}

// TestJetStreamClusterConsumerAckBatchOrder: another ack of the consumer
// in the same read goes into the log after the +ACKs held before it. A
// +TERM of a message the client acked just before finds it acknowledged
// (no terminated advisory); proposed first, it would terminate it.
func TestJetStreamClusterConsumerAckBatchOrder(t *testing.T) {
	c, nc, js, leader := ccSetup(t, 3)
	cons, err := js.CreateOrUpdateConsumer(ctx(t), "CC", jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	advisories, err := nc.SubscribeSync(JSAdvisoryConsumerMsgTerminatedPre + ".CC.D")
	if err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	batch, err := cons.Fetch(3, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var acks []string
	for m := range batch.Messages() {
		acks = append(acks, m.Reply())
	}
	if len(acks) != 3 {
		t.Fatalf("fetched %d messages (%v)", len(acks), batch.Error())
	}
	ls := c.serverNamed(leader)
	rawPubs(t, ls, [][2]string{{acks[0], ""}, {acks[1], "+ACK"}, {acks[0], "+TERM"}})
	rawPubs(t, ls, [][2]string{{acks[2], "+TERM"}})
	m, err := advisories.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatalf("no terminated advisory: %v", err)
	}
	var adv struct {
		StreamSeq uint64 `json:"stream_seq"`
	}
	if err := json.Unmarshal(m.Data, &adv); err != nil || adv.StreamSeq != 3 {
		t.Fatalf("first terminated advisory %s, want one for stream seq 3 (1 was acked before its +TERM)", m.Data)
	}
	if got, want := ccNumbers(ccInfo(t, js, "D")), "delivered 3/3 ack_floor 3/3 ack_pending 0 pending 0 redelivered 0"; got != want {
		t.Fatalf("%s, want %s", got, want)
	}
	checkConsumersAgree(t, c, "CC")
}

// TestJetStreamClusterConsumerAckBatchOlderReplica: while a replica of
// the stream speaks an older route protocol (a rolling upgrade: it would
// skip an OpAcks entry and its consumer state would part from the
// others'), the leader proposes the acks of one read one entry each, and
// every replica ends alike.
func TestJetStreamClusterConsumerAckBatchOlderReplica(t *testing.T) {
	c := runJSClusterWith(t, 3, func(i int, o *Options) {
		if i == 2 {
			o.routeProto = routeProtoAcks - 1
		}
	})
	nc, js := jsClient(t, c.servers[0])
	defer nc.Close()
	st := createStream(t, js, jetstream.StreamConfig{Name: "CC", Subjects: []string{"cc.>"}, Replicas: 3})
	for i := 1; i <= 20; i++ {
		if _, err := js.Publish(ctx(t), fmt.Sprintf("cc.%d", i), []byte("m")); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := js.CreateOrUpdateConsumer(ctx(t), "CC", jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(20, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var acks []string
	for m := range batch.Messages() {
		acks = append(acks, m.Reply())
	}
	if len(acks) != 20 {
		t.Fatalf("fetched %d messages (%v)", len(acks), batch.Error())
	}
	leader := st.CachedInfo().Cluster.Leader
	var ls *Server
	var mset *stream
	for _, m := range c.replicas("CC") {
		if m.jsa.js.srv.Name() == leader {
			ls, mset = m.jsa.js.srv, m
		}
	}
	mset.mu.Lock()
	before := mset.lastIndex
	mset.mu.Unlock()
	rawAcks(t, ls, acks)
	waitFor(t, 10*time.Second, "the acks applied", func() bool { return ccInfo(t, js, "D").AckFloor.Stream == 20 })
	mset.mu.Lock()
	entries := mset.lastIndex - before
	mset.mu.Unlock()
	if entries < 20 {
		t.Fatalf("20 acks took %d log entries with an older replica: batched", entries)
	}
	checkConsumersAgree(t, c, "CC")
}
