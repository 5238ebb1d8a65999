package server

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// `nats bench js` end to end (the consume, fetch and ordered benchmarks
// of issue 18): each reads the whole stream, and the durable consumers
// end with everything acknowledged. On one server and on an R3 stream.
func TestJSCLIBenchConsume(t *testing.T) {
	cli := natsCLI(t)
	t.Run("R1", func(t *testing.T) {
		benchConsumeScenario(t, cliAgainst(t, cli, runJSServer(t)), "1")
	})
	t.Run("R3", func(t *testing.T) {
		c := runJSCluster(t, 3)
		benchConsumeScenario(t, cliAgainst(t, cli, c.servers[0]), "3")
	})
}

func benchConsumeScenario(t *testing.T, nats func(args ...string) string, replicas string) {
	const n = 3000 // printed by the CLI as "expecting 3,000 messages"
	msgs := strconv.Itoa(n)
	nats("stream", "add", "benchstream", "--subjects", "bench.js", "--storage", "file", "--replicas", replicas, "--defaults")
	if out := nats("bench", "js", "pub", "async", "bench.js", "--msgs", msgs, "--size", "128", "--no-progress"); !strings.Contains(out, "msgs/sec") {
		t.Fatalf("bench js pub:\n%s", out)
	}
	for _, k := range []struct{ kind, durable, acks string }{
		{"consume", "c1", "explicit"}, {"fetch", "c2", "explicit"}, {"consume", "c3", "none"}, {"ordered", "", ""},
	} {
		args := []string{"bench", "js", k.kind, "--msgs", msgs, "--no-progress"}
		if k.durable != "" {
			nats("consumer", "add", "benchstream", k.durable, "--pull", "--deliver", "all", "--ack", k.acks, "--defaults")
			args = append(args, "--consumer", k.durable, "--acks", k.acks)
		}
		if out := nats(args...); !strings.Contains(out, "msgs/sec") || !strings.Contains(out, "expecting 3,000 messages") {
			t.Fatalf("bench js %s (%s):\n%s", k.kind, k.acks, out)
		}
		if k.durable == "" {
			continue
		}
		var ci struct {
			NumPending    uint64 `json:"num_pending"`
			NumAckPending int    `json:"num_ack_pending"`
			AckFloor      struct {
				Stream uint64 `json:"stream_seq"`
			} `json:"ack_floor"`
		}
		out := nats("consumer", "info", "benchstream", k.durable, "--json")
		if err := json.Unmarshal([]byte(out), &ci); err != nil || ci.NumPending != 0 || ci.NumAckPending != 0 || ci.AckFloor.Stream != n {
			t.Fatalf("%s after bench js %s: %v %+v\n%s", k.durable, k.kind, err, ci, out)
		}
	}
}
