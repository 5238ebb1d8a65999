//go:build !race

package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"syscall"
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
	old := -1
	waitFor(t, 10*time.Second, "the stream's leader", func() bool { old = c.streamLeader("KV"); return old >= 0 })
	pc := connectNATS(t, fmt.Sprintf("nats://127.0.0.1:%d", c.ports[old]), nats.IgnoreDiscoveredServers())
	// The leader serves reads under its lease now: one answered at once.
	waitFor(t, 10*time.Second, "a direct get through the leader", func() bool {
		m, err := pc.Request("$JS.API.DIRECT.GET.KV.kv.x", nil, time.Second)
		return err == nil && string(m.Data) == "old"
	})
	var others []string
	for i, p := range c.ports {
		if i != old {
			others = append(others, fmt.Sprintf("nats://127.0.0.1:%d", p))
		}
	}
	oc := connectNATS(t, strings.Join(others, ","), nats.IgnoreDiscoveredServers(), nats.MaxReconnects(-1))

	var mu sync.Mutex
	var answers []*nats.Msg
	inbox := nats.NewInbox()
	if _, err := pc.Subscribe(inbox+".*", func(m *nats.Msg) {
		mu.Lock()
		answers = append(answers, m)
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	if err := pc.Flush(); err != nil {
		t.Fatal(err)
	}

	p := c.procs[old]
	_ = p.cmd.Process.Signal(syscall.SIGSTOP)
	resumed := false
	defer func() {
		if !resumed {
			_ = p.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	waitFor(t, 30*time.Second, "the new value acknowledged by a new leader", func() bool { return put(oc, "new") })
	for n := 0; n < 20; n++ { // queued at the stopped server
		_ = pc.PublishRequest("$JS.API.DIRECT.GET.KV.kv.x", fmt.Sprintf("%s.d%d", inbox, n), nil)
		_ = pc.PublishRequest("$JS.API.STREAM.MSG.GET.KV", fmt.Sprintf("%s.m%d", inbox, n), []byte(`{"last_by_subj":"kv.x"}`))
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	resumed = true
	waitFor(t, 10*time.Second, "answers to the queued reads", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(answers) >= 40
	})
	mu.Lock()
	defer mu.Unlock()
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
