package server

import (
	"encoding/json"
	"strings"
	"testing"
)

// The nats CLI end to end: consumer add --pull, next, info, ls, rm.
func TestJSCLIConsumerPull(t *testing.T) {
	cli := natsCLI(t)
	s := runJSServer(t)
	nats := cliAgainst(t, cli, s)
	nats("stream", "add", "S", "--subjects", "s.>", "--defaults")
	nats("pub", "s.a", "one")
	nats("pub", "s.b", "two")
	if out := nats("consumer", "add", "S", "C", "--pull", "--defaults"); !strings.Contains(out, "Information for Consumer S > C") {
		t.Fatalf("consumer add:\n%s", out)
	}
	if out := nats("consumer", "next", "S", "C"); !strings.Contains(out, "subj: s.a") || !strings.Contains(out, "one") || !strings.Contains(out, "Acknowledged message") {
		t.Fatalf("consumer next:\n%s", out)
	}
	var ci struct {
		NumPending    uint64 `json:"num_pending"`
		NumAckPending int    `json:"num_ack_pending"`
		AckFloor      struct {
			Stream uint64 `json:"stream_seq"`
		} `json:"ack_floor"`
	}
	out := nats("consumer", "info", "S", "C", "--json")
	if err := json.Unmarshal([]byte(out), &ci); err != nil || ci.NumPending != 1 || ci.NumAckPending != 0 || ci.AckFloor.Stream != 1 {
		t.Fatalf("consumer info: %v %+v\n%s", err, ci, out)
	}
	if out := nats("consumer", "ls", "S", "--names"); strings.TrimSpace(out) != "C" {
		t.Fatalf("consumer ls: %q", out)
	}
	nats("consumer", "rm", "S", "C", "-f")
	if out := nats("consumer", "ls", "S", "--names"); strings.TrimSpace(out) != "" {
		t.Fatalf("consumer ls after rm: %q", out)
	}
}
