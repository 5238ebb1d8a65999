package server

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

func httpJSON(t *testing.T, s *Server, path string, v any) {
	t.Helper()
	b, err := httpGet(fmt.Sprintf("http://%s%s", s.MonitorAddr(), path))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v (%s)", path, err, b)
	}
}

func TestMonitorJszAndJetStreamHealth(t *testing.T) {
	o := testOptions()
	o.JetStream, o.StoreDir, o.HTTPHost, o.HTTPPort = true, t.TempDir(), "127.0.0.1", RANDOM_PORT
	s := runServer(t, o)
	_, js := jsClient(t, s)
	st := createStream(t, js, jetstream.StreamConfig{Name: "J", Subjects: []string{"j"}})
	js.Publish(ctx(t), "j", []byte("x"))
	_ = st
	var jsz JSInfo
	httpJSON(t, s, "/jsz", &jsz)
	if jsz.Streams != 1 || jsz.Messages != 1 || jsz.Disabled || jsz.Config.StoreDir != filepath.Join(o.StoreDir, "jetstream") || jsz.Accounts != 1 || jsz.API.Total == 0 {
		t.Fatalf("jsz %+v", jsz)
	}
	for _, q := range []string{"", "?js-enabled-only=true", "?js-server-only=true"} {
		var h map[string]any
		httpJSON(t, s, "/healthz"+q, &h)
		if h["status"] != "ok" {
			t.Fatalf("healthz%s: %v", q, h)
		}
	}
}

// streamsLed sums /jsz?raft=true's streams_leader over the running
// servers of c.
func streamsLed(t *testing.T, c *jsTestCluster) int {
	t.Helper()
	sum := 0
	for _, s := range c.servers {
		if !s.Running() {
			continue
		}
		var jsz JSInfo
		httpJSON(t, s, "/jsz?raft=true", &jsz)
		sum += jsz.StreamsLeader
	}
	return sum
}

// TestMonitorJszStreamsLeader: /jsz?raft=true counts the streams each
// server leads (what scripts/stream-scale polls for "every stream has a
// leader again"): over the cluster one per stream, again once the
// survivors of a shut-down server have taken its leaderships; plain /jsz
// leaves the count out.
func TestMonitorJszStreamsLeader(t *testing.T) {
	c := runJSClusterWith(t, 3, func(_ int, o *Options) { o.HTTPHost, o.HTTPPort = "127.0.0.1", RANDOM_PORT })
	_, js := jsClient(t, c.servers[0])
	const n = 4
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("L%d", i)
		createStream(t, js, jetstream.StreamConfig{Name: name, Subjects: []string{name}, Replicas: 3})
	}
	waitFor(t, 10*time.Second, "every stream led once", func() bool { return streamsLed(t, c) == n })
	var plain JSInfo
	httpJSON(t, c.servers[0], "/jsz", &plain)
	if plain.StreamsLeader != 0 || plain.Streams != n {
		t.Fatalf("plain /jsz: streams %d streams_leader %d", plain.Streams, plain.StreamsLeader)
	}
	// ?raft=true also counts the raft messages by type; each heartbeat
	// or append one server sent another received (plain /jsz: none).
	if plain.RaftSent != nil || plain.RaftReceived != nil {
		t.Fatalf("plain /jsz counts raft messages: %v %v", plain.RaftSent, plain.RaftReceived)
	}
	waitFor(t, 10*time.Second, "raft messages counted", func() bool {
		sent, recv := uint64(0), uint64(0)
		for _, s := range c.servers {
			var jsz JSInfo
			httpJSON(t, s, "/jsz?raft=true", &jsz)
			sent += jsz.RaftSent["App"] + jsz.RaftSent["Heartbeat"]
			recv += jsz.RaftReceived["App"] + jsz.RaftReceived["Heartbeat"]
		}
		return sent > 0 && recv > 0
	})
	var victim *Server
	for _, s := range c.servers {
		var jsz JSInfo
		httpJSON(t, s, "/jsz?raft=true", &jsz)
		if jsz.StreamsLeader > 0 && s != c.servers[0] {
			victim = s
		}
	}
	if victim == nil {
		victim = c.servers[1]
	}
	victim.Shutdown()
	waitFor(t, 15*time.Second, "the survivors lead every stream", func() bool { return streamsLed(t, c) == n })
}
