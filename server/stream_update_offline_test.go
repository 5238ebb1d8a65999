package server

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// An update of a stream whose servers are all down gets nats-server's
// 10118 "stream is offline" (500) from the meta leader, not silence until
// the client times out. An R1 stream is pinned by tag to S3, then S3 stops.
func TestJetStreamClusterStreamUpdateAllPeersOffline(t *testing.T) {
	tags := [][]string{{"n:1"}, {"n:2"}, {"n:3"}}
	c := runJSClusterWith(t, 3, func(i int, o *Options) { o.Tags = tags[i] })
	waitTagsKnown(t, c)
	nc, js := jsClient(t, c.servers[0])
	cfg := jetstream.StreamConfig{Name: "OFF", Subjects: []string{"off"}, Replicas: 1,
		Placement: &jetstream.Placement{Tags: []string{"n:3"}}}
	st, err := js.CreateStream(ctx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if l := st.CachedInfo().Cluster.Leader; l != "S3" {
		t.Fatalf("placed on %q", l)
	}
	cfg.Description = "changed"
	update := func() (code int, errCode uint16, desc, typ string) {
		t.Helper()
		m, err := nc.Request("$JS.API.STREAM.UPDATE.OFF", mustJSON(t, cfg), 5*time.Second)
		if err != nil {
			t.Fatalf("update: %v", err)
		}
		var r struct {
			Type  string `json:"type"`
			Error *struct {
				Code        int    `json:"code"`
				ErrCode     uint16 `json:"err_code"`
				Description string `json:"description"`
			} `json:"error"`
		}
		if err := json.Unmarshal(m.Data, &r); err != nil {
			t.Fatalf("%v: %s", err, m.Data)
		}
		if r.Error == nil {
			return 0, 0, "", r.Type
		}
		return r.Error.Code, r.Error.ErrCode, r.Error.Description, r.Type
	}
	if code, _, desc, _ := update(); code != 0 {
		t.Fatalf("update while S3 runs: %d %s", code, desc)
	}
	c.servers[2].Shutdown()
	waitFor(t, 5*time.Second, "S3's routes gone", func() bool {
		for _, s := range c.servers[:2] {
			if slices.ContainsFunc(s.routeList(), func(r *route) bool { return r.remote.Name == "S3" }) {
				return false
			}
		}
		return true
	})
	waitFor(t, 10*time.Second, "a meta leader among S1 and S2, known to both", func() bool {
		leads := 0
		for _, s := range c.servers[:2] {
			jc := s.js.Load().cluster
			if jc.isMetaLeader() {
				leads++
			}
			if !jc.metaLeaderKnown() {
				return false
			}
		}
		return leads == 1
	})
	cfg.Description = "again"
	code, errCode, desc, typ := update()
	if code != 500 || errCode != 10118 || desc != "stream is offline" || typ != "io.nats.jetstream.api.v1.stream_update_response" {
		t.Fatalf("update with S3 down: type %q code %d err_code %d %q", typ, code, errCode, desc)
	}
}
