package server

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Ack policy flow_control: a push consumer is acknowledged only by the
// answers to its flow control requests (Nats-Last-Stream up to which
// everything is acked), as nats-server v2.15.2. With max_ack_pending 10
// it stops at 10 unacknowledged messages and asks for flow control, +ACK
// on the ack subjects is ignored, an idle heartbeat asks again while some
// are unacknowledged, and answered requests move the ack floor. On one
// server and on an R3 stream in a cluster (the ack goes through the log).
func TestConsumerAckFlowControl(t *testing.T) {
	t.Run("one server", func(t *testing.T) {
		nc, js := jsClient(t, runJSServer(t))
		ackFlowControlScenario(t, nc, js, 1)
	})
	t.Run("R3", func(t *testing.T) {
		c := runJSCluster(t, 3)
		nc, js := jsClient(t, c.servers[1])
		ackFlowControlScenario(t, nc, js, 3)
	})
}

func ackFlowControlScenario(t *testing.T, nc *nats.Conn, js jetstream.JetStream, replicas int) {
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Replicas: replicas}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 25; i++ {
		if _, err := js.Publish(ctx(t), fmt.Sprintf("s.%d", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	sub, _ := nc.SubscribeSync("af")
	req := `{"stream_name":"S","config":{"durable_name":"AF","deliver_subject":"af","ack_policy":"flow_control","max_ack_pending":10}}`
	resp, err := nc.Request("$JS.API.CONSUMER.CREATE.S.AF", []byte(req), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var cr JSApiConsumerCreateResponse
	if json.Unmarshal(resp.Data, &cr) != nil || cr.Error != nil || cr.Config == nil {
		t.Fatalf("create: %s", resp.Data)
	}
	if c := cr.Config; !c.FlowControl || c.Heartbeat != time.Second || c.AckWait != 0 {
		t.Fatalf("normalised config: %s", resp.Data)
	}
	last := uint64(0)
	// takeUntilFC reads data messages up to the next flow control request
	// (skipping heartbeats), +ACKs each (which must change nothing), and
	// returns the request.
	takeUntilFC := func(want int) *nats.Msg {
		t.Helper()
		got := 0
		for deadline := time.Now().Add(5 * time.Second); ; {
			if time.Now().After(deadline) {
				t.Fatalf("no flow control request after %d messages", got)
			}
			m := nextMsg(t, sub, 5*time.Second)
			switch m.Header.Get("Description") {
			case "FlowControl Request":
				if got != want {
					t.Fatalf("flow control request after %d messages, want %d", got, want)
				}
				return m
			case "":
				md, err := m.Metadata()
				if err != nil {
					t.Fatalf("data message %q: %v", m.Reply, err)
				}
				last = md.Sequence.Stream
				m.Ack()
				got++
			}
		}
	}
	answer := func(fc *nats.Msg, sseq uint64) {
		t.Helper()
		r := nats.NewMsg(fc.Reply)
		r.Header.Set(JSLastConsumerSeq, strconv.FormatUint(sseq, 10))
		r.Header.Set(JSLastStreamSeq, strconv.FormatUint(sseq, 10))
		if err := nc.PublishMsg(r); err != nil {
			t.Fatal(err)
		}
	}
	floorIs := func(want uint64, ackPending int) {
		t.Helper()
		var seen any
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			var ci JSApiConsumerInfoResponse
			r, err := nc.Request("$JS.API.CONSUMER.INFO.S.AF", nil, 2*time.Second)
			if err == nil {
				err = json.Unmarshal(r.Data, &ci)
			}
			if err == nil && ci.ConsumerInfo != nil && ci.AckFloor.Stream == want && ci.NumAckPending == ackPending {
				return
			}
			if seen = err; err == nil {
				seen = string(r.Data)
			}
			if time.Now().After(deadline) {
				t.Fatalf("want ack floor %d and %d ack pending: %+v", want, ackPending, seen)
			}
		}
	}
	fc := takeUntilFC(10) // max_ack_pending reached: the +ACKs freed nothing
	floorIs(0, 10)
	answer(fc, last)
	fc = takeUntilFC(10)
	floorIs(10, 10)
	answer(fc, last)
	fc = takeUntilFC(5) // the idle heartbeat asks for the last 5
	answer(fc, last)
	floorIs(25, 0)
	if last != 25 {
		t.Fatalf("last delivered %d, want 25", last)
	}
}
