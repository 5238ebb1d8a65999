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

// TestNoRaceJetStreamClusterReadsAfterLeasePause stops an R3 stream's
// leader (SIGSTOP), which holds a lease then (it answers reads without a
// heartbeat round), until another server leads and has acknowledged a new
// value, queues direct gets and STREAM.MSG.GET of the key at the stopped
// server, and wakes it: every answer must show the new value. The stopped
// leader's clock moved on while it stood still, so it must find its lease
// gone when it takes the queued reads (a lease counted in ticks, which stop
// with the process, would still hold and answer from the old state).
func TestNoRaceJetStreamClusterReadsAfterLeasePause(t *testing.T) {
	c := startChaosCluster(t, "")
	nc := connectNATS(t, c.urls(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	waitFor(t, 20*time.Second, "the R3 stream", func() bool {
		resp, err := nc.Request("$JS.API.STREAM.CREATE.KV",
			[]byte(`{"name":"KV","subjects":["kv.>"],"num_replicas":3,"allow_direct":true}`), time.Second)
		return err == nil && !strings.Contains(string(resp.Data), `"error"`)
	})
	put := func(nc *nats.Conn, v string) bool {
		resp, err := nc.Request("kv.x", []byte(v), time.Second)
		var ack casAck
		return err == nil && json.Unmarshal(resp.Data, &ack) == nil && ack.Error == nil && ack.Seq > 0
	}
	waitFor(t, 10*time.Second, "the old value stored", func() bool { return put(nc, "old") })
	p := leaderToPause(t, c, "KV")
	// The leader serves reads under its lease now: one answered at once.
	waitFor(t, 10*time.Second, "a direct get through the leader", func() bool {
		m, err := p.pc.Request("$JS.API.DIRECT.GET.KV.kv.x", nil, time.Second)
		return err == nil && string(m.Data) == "old"
	})
	p.stop(t)
	waitFor(t, 30*time.Second, "the new value acknowledged by a new leader", func() bool { return put(p.oc, "new") })
	for n := 0; n < 20; n++ { // queued at the stopped server
		_ = p.pc.PublishRequest("$JS.API.DIRECT.GET.KV.kv.x", p.reply(fmt.Sprintf("d%d", n)), nil)
		_ = p.pc.PublishRequest("$JS.API.STREAM.MSG.GET.KV", p.reply(fmt.Sprintf("m%d", n)), []byte(`{"last_by_subj":"kv.x"}`))
	}
	answers := p.resume(t, 40)
	stale, answered := 0, 0
	for _, m := range answers {
		v, ok := readValue(t, m)
		if !ok {
			continue // no outcome (an error status or 10008)
		}
		answered++
		if v != "new" {
			stale++
			t.Logf("stale answer on %s: %q", m.Subject, v)
		}
	}
	if answered == 0 {
		t.Fatal("no queued read was answered")
	}
	if stale > 0 {
		t.Fatalf("%d of %d reads answered from the woken leader's old state", stale, answered)
	}
}

// readValue is the value a direct get or STREAM.MSG.GET answer carries,
// and whether it carries one.
func readValue(t *testing.T, m *nats.Msg) (string, bool) {
	if tok := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]; !strings.HasPrefix(tok, "m") {
		if m.Header.Get("Status") != "" {
			return "", false
		}
		return string(m.Data), true
	}
	var r struct {
		Error   *ApiError `json:"error"`
		Message *struct {
			Data []byte `json:"data"`
		} `json:"message"`
	}
	if err := json.Unmarshal(m.Data, &r); err != nil {
		t.Fatalf("answer %s: %v", m.Data, err)
	}
	if r.Error != nil || r.Message == nil {
		return "", false
	}
	return string(r.Message.Data), true
}
