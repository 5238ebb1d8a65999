package server

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// runCLIResult runs the nats CLI like runCLI but hands back the error, for
// steps that may legitimately fail.
func runCLIResult(t *testing.T, cli string, args ...string) (string, error) {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(c, cli, args...)
	cmd.Env = append(os.Environ(), "NATS_CONTEXT=", "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// cliAgainst runs the nats CLI against s and returns its output (the test
// fails if the command fails).
func cliAgainst(t *testing.T, cli string, s *Server) func(args ...string) string {
	srv := []string{"-s", s.ClientURL()}
	return func(args ...string) string {
		t.Helper()
		return runCLI(t, cli, append(srv, args...)...)
	}
}

func TestJSCLIStream(t *testing.T) {
	cli := natsCLI(t)
	s := runJSServer(t)
	nats := cliAgainst(t, cli, s)

	if out := nats("stream", "add", "S", "--subjects", "s.>", "--defaults"); !strings.Contains(out, "Stream S was created") {
		t.Fatalf("stream add:\n%s", out)
	}
	if out := nats("pub", "s.x", "hi"); !strings.Contains(out, `Published 2 bytes to "s.x"`) {
		t.Fatalf("pub:\n%s", out)
	}
	var si struct {
		Config struct {
			Name     string   `json:"name"`
			Subjects []string `json:"subjects"`
			MaxMsgs  int64    `json:"max_msgs"`
		} `json:"config"`
		State struct {
			Msgs    uint64 `json:"messages"`
			LastSeq uint64 `json:"last_seq"`
		} `json:"state"`
	}
	out := nats("stream", "info", "S", "--json")
	if err := json.Unmarshal([]byte(out), &si); err != nil {
		t.Fatalf("stream info --json is not JSON: %v\n%s", err, out)
	}
	if si.Config.Name != "S" || len(si.Config.Subjects) != 1 || si.Config.Subjects[0] != "s.>" || si.Config.MaxMsgs != -1 ||
		si.State.Msgs != 1 || si.State.LastSeq != 1 {
		t.Fatalf("stream info: %+v", si)
	}
	if out := nats("stream", "get", "S", "1"); !strings.Contains(out, "S#1") || !strings.Contains(out, "s.x") || !strings.Contains(out, "hi") {
		t.Fatalf("stream get:\n%s", out)
	}
	if out := nats("stream", "purge", "S", "-f"); !strings.Contains(out, "Purged 1 messages from S") {
		t.Fatalf("stream purge:\n%s", out)
	}
	nats("stream", "rm", "S", "-f")

	// The CLI's work is visible through nats.go.
	_, js := jsClient(t, s)
	if _, err := js.Stream(ctx(t), "S"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("stream after nats stream rm: %v", err)
	}
}

func TestJSCLIKV(t *testing.T) {
	cli := natsCLI(t)
	s := runJSServer(t)
	nats := cliAgainst(t, cli, s)

	if out := nats("kv", "add", "B"); !strings.Contains(out, "Bucket Name: B") {
		t.Fatalf("kv add:\n%s", out)
	}
	nats("kv", "put", "B", "k", "v")
	if out := nats("stream", "ls", "--names"); strings.TrimSpace(out) != "KV_B" {
		t.Fatalf("stream ls --names: %q", out)
	}
	if out := nats("kv", "get", "B", "k", "--raw"); strings.TrimSpace(out) != "v" {
		t.Fatalf("kv get --raw: %q", out)
	}
	// A stale revision is refused with the server's error text.
	out, err := runCLIResult(t, cli, "-s", s.ClientURL(), "kv", "update", "B", "k", "v2", "7")
	if err == nil || !strings.Contains(out, "wrong last sequence: 1") {
		t.Fatalf("kv update with a stale revision: %v\n%s", err, out)
	}

	// The value the CLI wrote is what nats.go reads.
	_, js := jsClient(t, s)
	kv, err := js.KeyValue(ctx(t), "B")
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx(t), "k")
	if err != nil || string(e.Value()) != "v" || e.Revision() != 1 {
		t.Fatalf("nats.go get of the CLI's value: %v %v", e, err)
	}
}
