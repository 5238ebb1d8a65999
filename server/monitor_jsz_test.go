package server

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

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
