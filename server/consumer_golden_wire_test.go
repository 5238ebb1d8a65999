package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestConsumerGoldenWire sends every recorded pull-consumer CONSUMER.CREATE
// case to a real Tern server (a fresh stream each) and compares its answer
// with nats-server's, as TestConsumerGolden does for the pure decision:
// routing, decoding and the response as it goes on the wire, push
// consumers included. Cases nats-server does not answer and those of a server with jetstream limits
// (Tern does not take the option yet). Server version metadata is compared by
// presence only.
func TestConsumerGoldenWire(t *testing.T) {
	servers := map[string]*nats.Conn{}
	conn := func(kind string) *nats.Conn {
		if nc := servers[kind]; nc != nil {
			return nc
		}
		o := testOptions()
		o.JetStream, o.StoreDir = true, t.TempDir()
		servers[kind] = connectNATS(t, runServer(t, o).ClientURL())
		return servers[kind]
	}
	request := func(nc *nats.Conn, r ccReq) map[string]any {
		m, err := nc.Request(jsAPIPrefix+r.Subject, []byte(r.Body), 2*time.Second)
		if err != nil {
			return nil
		}
		var v map[string]any
		if json.Unmarshal(m.Data, &v) != nil {
			return nil
		}
		return v
	}
	match, tried := 0, 0
	for _, c := range ccCases() {
		if c.Server == "limits" || strings.Contains(c.Req.Body, `"stream_name":"X"`) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(ccGoldenDir, c.Name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var g ccGoldenFile
		var want map[string]any
		if json.Unmarshal(b, &g) != nil || json.Unmarshal(g.Response, &want) != nil || want == nil {
			continue
		}
		tried++
		nc := conn(c.Server)
		nc.Request(jsAPIPrefix+"STREAM.DELETE."+c.Stream, nil, time.Second)
		if _, err := nc.Request(jsAPIPrefix+"STREAM.CREATE."+c.Stream, []byte(ccStreams[c.Stream]), time.Second); err != nil {
			t.Fatal(err)
		}
		for _, p := range c.Pre {
			request(nc, p)
		}
		got := request(nc, c.Req)
		for _, m := range []map[string]any{want, got} {
			if cfg, _ := m["config"].(map[string]any); cfg != nil {
				if md, _ := cfg["metadata"].(map[string]any); md != nil {
					for _, k := range []string{metaServerVersion, metaServerLevel} {
						if _, ok := md[k]; ok {
							md[k] = "present"
						}
					}
				}
			}
		}
		if diffs := ccDiff(want, got); len(diffs) > 0 {
			t.Errorf("%s: differs from nats-server:\n%s", c.Name, joinLines(diffs))
			continue
		}
		match++
	}
	t.Logf("%d/%d golden CONSUMER.CREATE cases match nats-server v2.15.2 on the wire", match, tried)
}
