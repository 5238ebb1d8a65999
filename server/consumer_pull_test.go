package server

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func consumerStream(t *testing.T, js jetstream.JetStream, storage jetstream.StorageType, n int) {
	t.Helper()
	consumerStreamR(t, js, storage, n, 1)
}

// consumerStreamR is consumerStream with that many replicas.
func consumerStreamR(t *testing.T, js jetstream.JetStream, storage jetstream.StorageType, n, replicas int) {
	t.Helper()
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Storage: storage, Replicas: replicas}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if _, err := js.Publish(ctx(t), fmt.Sprintf("s.%d", i), []byte(fmt.Sprintf("m%d", i))); err != nil {
			t.Fatal(err)
		}
	}
}

func consumerInfo(t *testing.T, c jetstream.Consumer) *jetstream.ConsumerInfo {
	t.Helper()
	ci, err := c.Info(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	return ci
}

func TestConsumerPullFetchAckInfo(t *testing.T) {
	for _, st := range []jetstream.StorageType{jetstream.FileStorage, jetstream.MemoryStorage} {
		t.Run(st.String(), func(t *testing.T) {
			s := runJSServer(t)
			_, js := jsClient(t, s)
			consumerStream(t, js, st, 5)
			c, err := js.CreateOrUpdateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckExplicitPolicy})
			if err != nil {
				t.Fatal(err)
			}
			if ci := consumerInfo(t, c); ci.NumPending != 5 || ci.Delivered.Stream != 0 {
				t.Fatalf("fresh consumer: pending %d delivered %+v", ci.NumPending, ci.Delivered)
			}
			b, err := c.Fetch(3, jetstream.FetchMaxWait(2*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			var got []jetstream.Msg
			for m := range b.Messages() {
				got = append(got, m)
			}
			if b.Error() != nil || len(got) != 3 {
				t.Fatalf("fetch: %d msgs, err %v", len(got), b.Error())
			}
			for i, m := range got {
				md, _ := m.Metadata()
				if m.Subject() != fmt.Sprintf("s.%d", i+1) || md.Sequence.Stream != uint64(i+1) || md.NumPending != uint64(4-i) || md.NumDelivered != 1 {
					t.Fatalf("msg %d: subject %q meta %+v", i, m.Subject(), md)
				}
			}
			if err := got[1].Ack(); err != nil {
				t.Fatal(err)
			}
			if err := got[0].DoubleAck(ctx(t)); err != nil { // AckSync: answered after the apply
				t.Fatal(err)
			}
			ci := consumerInfo(t, c)
			if ci.NumPending != 2 || ci.NumAckPending != 1 || ci.Delivered.Consumer != 3 || ci.Delivered.Stream != 3 ||
				ci.AckFloor.Consumer != 2 || ci.AckFloor.Stream != 2 || ci.NumRedelivered != 0 {
				t.Fatalf("info after acks: %+v", ci)
			}
		})
	}
}

func TestConsumerPullNoWaitAndExpires(t *testing.T) {
	s := runJSServer(t)
	_, js := jsClient(t, s)
	consumerStream(t, js, jetstream.MemoryStorage, 1)
	c, err := js.CreateOrUpdateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.FetchNoWait(5)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for m := range b.Messages() {
		m.Ack()
		n++
	}
	if n != 1 || b.Error() != nil {
		t.Fatalf("no_wait with one message: %d, %v", n, b.Error())
	}
	if _, err := c.Next(jetstream.FetchMaxWait(300 * time.Millisecond)); !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("next on empty: %v, want timeout (408)", err)
	}
	// The raw statuses, as nats.go parses them.
	nc := connectNATS(t, s.ClientURL())
	m, err := nc.Request("$JS.API.CONSUMER.MSG.NEXT.S.D", []byte(`{"batch":2,"no_wait":true}`), time.Second)
	if err != nil || m.Header.Get("Status") != "404" || m.Header.Get("Description") != "No Messages" {
		t.Fatalf("no_wait on empty: %v %+v", err, m)
	}
	m, err = nc.Request("$JS.API.CONSUMER.MSG.NEXT.S.D", []byte(`{"batch":2,"expires":100000000}`), time.Second)
	if err != nil || m.Header.Get("Status") != "408" || m.Header.Get("Description") != "Request Timeout" ||
		m.Header.Get("Nats-Pending-Messages") != "2" || m.Header.Get("Nats-Pending-Bytes") != "0" {
		t.Fatalf("expired request: %v %+v", err, m)
	}
}

func TestConsumerNakAndAckWaitRedeliver(t *testing.T) {
	s := runJSServer(t)
	_, js := jsClient(t, s)
	consumerStream(t, js, jetstream.FileStorage, 1)
	c, err := js.CreateOrUpdateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.Next()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Nak(); err != nil {
		t.Fatal(err)
	}
	m, err = c.Next()
	if err != nil {
		t.Fatal(err)
	}
	md, _ := m.Metadata()
	if md.Sequence.Stream != 1 || md.NumDelivered != 2 || md.Sequence.Consumer != 2 {
		t.Fatalf("after nak: %+v", md)
	}
	// Not acknowledged: ack_wait brings it back a third time.
	m, err = c.Next(jetstream.FetchMaxWait(3 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	md, _ = m.Metadata()
	if md.Sequence.Stream != 1 || md.NumDelivered != 3 {
		t.Fatalf("after ack wait: %+v", md)
	}
	if ci := consumerInfo(t, c); ci.NumRedelivered != 1 || ci.NumAckPending != 1 || ci.NumPending != 0 {
		t.Fatalf("info: %+v", ci)
	}
	if err := m.Term(); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx(t), "s.2", nil); err != nil {
		t.Fatal(err)
	}
	m, err = c.Next()
	if err != nil {
		t.Fatal(err)
	}
	if md, _ := m.Metadata(); md.Sequence.Stream != 2 {
		t.Fatalf("after term: %+v", md)
	}
}

func TestConsumerConsumeNamesListDelete(t *testing.T) {
	s := runJSServer(t)
	_, js := jsClient(t, s)
	consumerStream(t, js, jetstream.MemoryStorage, 20)
	for _, n := range []string{"B", "A"} {
		if _, err := js.CreateOrUpdateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: n, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			t.Fatal(err)
		}
	}
	c, _ := js.Consumer(ctx(t), "S", "A")
	got := make(chan uint64, 40)
	cc, err := c.Consume(func(m jetstream.Msg) {
		md, _ := m.Metadata()
		m.Ack()
		got <- md.Sequence.Stream
	}, jetstream.PullMaxMessages(7), jetstream.PullHeartbeat(time.Second))
	// The heartbeat is short because nats.go 1.55's Consume skips its refill
	// check while its own previous pull request is still being sent
	// (checkPending with fetchInProgress set): when the last messages of the
	// stream arrive in that window it asks for nothing more until it misses
	// two heartbeats (30 s by default). A fast answer on a loaded machine hits
	// the window; the client recovers after 2 s here.
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 20; i++ {
		select {
		case seq := <-got:
			if seq != i {
				t.Fatalf("consume: got %d want %d", seq, i)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("consume: waiting for %d", i)
		}
	}
	cc.Stop()
	var names []string
	str, _ := js.Stream(ctx(t), "S")
	l := str.ConsumerNames(ctx(t))
	for n := range l.Name() {
		names = append(names, n)
	}
	if fmt.Sprint(names) != "[A B]" || l.Err() != nil {
		t.Fatalf("names %v %v", names, l.Err())
	}
	infos := str.ListConsumers(ctx(t))
	n := 0
	for ci := range infos.Info() {
		if ci.Name == "A" && (ci.NumPending != 0 || ci.AckFloor.Stream != 20) {
			t.Fatalf("list A: %+v", ci)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("list: %d", n)
	}
	if si, err := str.Info(ctx(t)); err != nil || si.State.Consumers != 2 {
		t.Fatalf("stream info consumer_count: %v %+v", err, si)
	}
	if ai, err := js.AccountInfo(ctx(t)); err != nil || ai.Consumers != 2 {
		t.Fatalf("account info consumers: %v %+v", err, ai)
	}
	if err := js.DeleteConsumer(ctx(t), "S", "B"); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Consumer(ctx(t), "S", "B"); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Fatalf("deleted consumer: %v", err)
	}
	if err := js.DeleteConsumer(ctx(t), "S", "B"); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
}

// A durable consumer of a file stream resumes after a restart without
// redelivering what was acknowledged.
func TestConsumerRestartResumes(t *testing.T) {
	o := testOptions()
	o.JetStream = true
	o.StoreDir = t.TempDir()
	s := runServer(t, o)
	nc, js := jsClient(t, s)
	consumerStream(t, js, jetstream.FileStorage, 4)
	c, err := js.CreateOrUpdateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		m, err := c.Next()
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Ack(); err != nil { // plain acks: saved at the latest by the clean shutdown
			t.Fatal(err)
		}
	}
	waitFor(t, 2*time.Second, "the acks", func() bool { return consumerInfo(t, c).AckFloor.Stream == 2 })
	nc.Close()
	s.Shutdown()
	s.WaitForShutdown()
	s = runServer(t, o)
	_, js = jsClient(t, s)
	c, err = js.Consumer(ctx(t), "S", "D")
	if err != nil {
		t.Fatal(err)
	}
	if ci := consumerInfo(t, c); ci.AckFloor.Stream != 2 || ci.NumPending != 2 || ci.Delivered.Consumer != 2 {
		t.Fatalf("after restart: %+v", ci)
	}
	m, err := c.Next()
	if err != nil {
		t.Fatal(err)
	}
	if md, _ := m.Metadata(); md.Sequence.Stream != 3 || md.Sequence.Consumer != 3 {
		t.Fatalf("resumed at %+v", md.Sequence)
	}
}

// A waiting pull request gets a message published after it arrived.
func TestConsumerPullWaitsForPublish(t *testing.T) {
	s := runJSServer(t)
	_, js := jsClient(t, s)
	consumerStream(t, js, jetstream.FileStorage, 0)
	c, err := js.CreateOrUpdateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Fetch(2, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "the request to wait", func() bool { return consumerInfo(t, c).NumWaiting == 1 })
	for i := 1; i <= 2; i++ {
		if _, err := js.Publish(ctx(t), fmt.Sprintf("s.%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for m := range b.Messages() {
		if md, _ := m.Metadata(); md.Sequence.Stream != uint64(n+1) || md.NumPending != 0 {
			t.Fatalf("msg %d: %+v", n, md)
		}
		n++
	}
	if n != 2 || b.Error() != nil {
		t.Fatalf("got %d, %v", n, b.Error())
	}
}

// An ephemeral nobody pulls from goes after its inactive_threshold; one
// with a waiting request stays.
func TestConsumerEphemeralInactive(t *testing.T) {
	s := runJSServer(t)
	_, js := jsClient(t, s)
	consumerStream(t, js, jetstream.MemoryStorage, 0)
	idle, err := js.CreateConsumer(ctx(t), "S", jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy, InactiveThreshold: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	busy, err := js.CreateConsumer(ctx(t), "S", jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy, InactiveThreshold: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b, err := busy.Fetch(1, jetstream.FetchMaxWait(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	name := consumerInfo(t, idle).Name
	waitFor(t, 3*time.Second, "the idle ephemeral to go", func() bool {
		_, err := js.Consumer(ctx(t), "S", name)
		return errors.Is(err, jetstream.ErrConsumerNotFound)
	})
	if ci := consumerInfo(t, busy); ci.NumWaiting != 1 {
		t.Fatalf("busy ephemeral: %+v", ci)
	}
	for range b.Messages() {
	}
}

// Messages that leave the stream (delete, limits, purge) leave the
// consumer's pending set and its ack floor moves over them.
func TestConsumerStreamRemovals(t *testing.T) {
	s := runJSServer(t)
	_, js := jsClient(t, s)
	str, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, MaxMsgs: 4})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 4; i++ {
		js.Publish(ctx(t), "s.x", nil)
	}
	c, _ := js.CreateOrUpdateConsumer(ctx(t), "S", jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckExplicitPolicy})
	b, _ := c.Fetch(3)
	for range b.Messages() {
	}
	if err := str.DeleteMsg(ctx(t), 2); err != nil {
		t.Fatal(err)
	}
	if ci := consumerInfo(t, c); ci.NumAckPending != 2 || ci.AckFloor.Stream != 0 {
		t.Fatalf("after delete of 2: %+v", ci)
	}
	js.Publish(ctx(t), "s.x", nil)
	js.Publish(ctx(t), "s.x", nil) // max_msgs drops 1
	if ci := consumerInfo(t, c); ci.NumAckPending != 1 || ci.AckFloor.Stream != 2 || ci.NumPending != 3 {
		t.Fatalf("after limits dropped 1: %+v", ci)
	}
	if err := str.Purge(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if ci := consumerInfo(t, c); ci.NumAckPending != 0 || ci.NumPending != 0 || ci.AckFloor.Stream != 6 || ci.Delivered.Stream != 6 {
		t.Fatalf("after purge: %+v", ci)
	}
	js.Publish(ctx(t), "s.x", nil)
	m, err := c.Next()
	if err != nil {
		t.Fatal(err)
	}
	if md, _ := m.Metadata(); md.Sequence.Stream != 7 || md.Sequence.Consumer != 4 {
		t.Fatalf("after purge delivered %+v", md.Sequence)
	}
}
