//go:build !race

package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestNoRaceJetStreamClusterInfoAfterPause pauses an R3 stream's leader
// (SIGSTOP) until another server leads and has acknowledged a publish,
// asks STREAM.INFO and CONSUMER.INFO through a client of the paused server
// meanwhile, and wakes it: no answer may show a last sequence (or a
// consumer's stream position) below the acknowledged one. Before INFO
// waited for a read index the woken leader answered the requests it found
// queued from the state it had when it stopped.
func TestNoRaceJetStreamClusterInfoAfterPause(t *testing.T) {
	c := startChaosCluster(t, "")
	nc := connectNATS(t, c.urls(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	waitFor(t, 20*time.Second, "the R3 stream and its consumer", func() bool {
		_, err := nc.Request("$JS.API.STREAM.CREATE.KV", []byte(`{"name":"KV","subjects":["kv.>"],"num_replicas":3}`), time.Second)
		if err != nil {
			return false
		}
		resp, err := nc.Request("$JS.API.CONSUMER.CREATE.KV.C", []byte(`{"stream_name":"KV","config":{"durable_name":"C","ack_policy":"explicit"}}`), time.Second)
		return err == nil && !strings.Contains(string(resp.Data), `"error"`)
	})
	publish := func(nc *nats.Conn) uint64 {
		resp, err := nc.Request("kv.x", []byte("v"), time.Second)
		if err != nil {
			return 0
		}
		var ack casAck
		if json.Unmarshal(resp.Data, &ack) != nil || ack.Error != nil {
			return 0
		}
		return ack.Seq
	}
	waitFor(t, 10*time.Second, "a first publish", func() bool { return publish(nc) > 0 })
	p := leaderToPause(t, c, "KV")
	p.stop(t)
	var acked uint64
	waitFor(t, 30*time.Second, "a publish acknowledged by a new leader", func() bool { acked = publish(p.oc); return acked > 0 })
	for n := 0; n < 20; n++ { // queued at the paused server
		_ = p.pc.PublishRequest("$JS.API.CONSUMER.INFO.KV.C", p.reply(fmt.Sprintf("c%d", n)), nil)
		_ = p.pc.PublishRequest("$JS.API.STREAM.INFO.KV", p.reply(fmt.Sprintf("s%d", n)), nil)
	}
	answers := p.resume(t, 40)
	stale, answered := 0, 0
	for _, a := range answers {
		kind, body := a.Subject[strings.LastIndexByte(a.Subject, '.')+1], a.Data // 's' or 'c' (reply(tag))
		var r struct {
			Error *ApiError `json:"error"`
			State *struct {
				LastSeq uint64 `json:"last_seq"`
			} `json:"state"`
			Delivered *struct {
				Stream uint64 `json:"stream_seq"`
			} `json:"delivered"`
			NumPending *uint64 `json:"num_pending"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatalf("answer %s: %v", body, err)
		}
		if r.Error != nil {
			continue // no outcome (10008)
		}
		answered++
		switch {
		case kind == 's' && (r.State == nil || r.State.LastSeq < acked):
			stale++
			t.Logf("stale STREAM.INFO: %s", body)
		case kind == 'c' && (r.NumPending == nil || *r.NumPending < acked):
			// Nothing was consumed: the consumer's pending count is the
			// stream's message count, acked among them.
			stale++
			t.Logf("stale CONSUMER.INFO: %s", body)
		}
	}
	if answered == 0 {
		t.Fatal("no queued request was answered")
	}
	if stale > 0 {
		t.Fatalf("%d of %d answers were from the woken leader's old state (publish acknowledged at sequence %d)", stale, answered, acked)
	}
}
