package server

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestJetStreamClusterUpdateOfflineStream: an update of a stream whose
// only server is down is answered "stream is offline" (10118, as
// nats-server answers it) instead of going unanswered.
func TestJetStreamClusterUpdateOfflineStream(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	st := createStream(t, js, jetstream.StreamConfig{Name: "OFF", Subjects: []string{"off"}, Replicas: 1})
	host := c.serverNamed(st.CachedInfo().Cluster.Leader)
	var via *Server
	for _, s := range c.servers {
		if s != host {
			via = s
		}
	}
	host.Shutdown()
	waitFor(t, 15*time.Second, "the meta leader to see the stream offline", func() bool {
		for _, s := range c.servers {
			if s == host {
				continue
			}
			if jc := s.js.Load().cluster; jc.isMetaLeader() {
				sa := jc.assignment(globalAccountName, "OFF")
				return sa != nil && jc.streamOffline(sa)
			}
		}
		return false
	})
	nc := connectNATS(t, via.ClientURL())
	cfg, _ := json.Marshal(map[string]any{"name": "OFF", "subjects": []string{"off"}, "max_msgs": 10, "storage": "file", "num_replicas": 1})
	m, err := nc.Request("$JS.API.STREAM.UPDATE.OFF", cfg, 5*time.Second)
	if err != nil {
		t.Fatalf("the update of an offline stream: %v", err)
	}
	var resp struct {
		Type  string    `json:"type"`
		Error *ApiError `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &resp); err != nil || resp.Error == nil || resp.Error.ErrCode != 10118 ||
		resp.Error.Code != 500 || resp.Error.Description != "stream is offline" || resp.Type != "io.nats.jetstream.api.v1.stream_update_response" {
		t.Fatalf("the update of an offline stream was answered %s", m.Data)
	}
}
