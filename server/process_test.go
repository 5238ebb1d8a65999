package server

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// natsCLI finds the `nats` CLI. CI installs it and sets TERN_REQUIRE_CLI so
// a missing CLI fails instead of skipping.
func natsCLI(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("nats"); err == nil {
		return p
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, "go", "bin", "nats")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv("TERN_REQUIRE_CLI") != "" {
		t.Fatal("nats CLI not found (go install github.com/nats-io/natscli/nats@v0.5.0)")
	}
	t.Skip("nats CLI not installed")
	return ""
}

// runCLI runs the nats CLI with a deadline and returns its combined output.
func runCLI(t *testing.T, cli string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, args...)
	cmd.Env = append(os.Environ(), "NATS_CONTEXT=", "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nats %v: %v\n%s", args, err, out)
	}
	return string(out)
}

const processConf = `
listen: 127.0.0.1:%PORT%
server_name: tern-proc
http_port: %HTTP%
accounts {
  APP { users: [ {user: app, password: app} ] }
  SYS { users: [ {user: sys, password: sys} ] }
}
system_account: SYS
`

func startConfProcess(t *testing.T) (*serverProcess, string) {
	port, httpPort := freePort(t), freePort(t)
	conf := strings.NewReplacer("%PORT%", itoa(port), "%HTTP%", itoa(httpPort)).Replace(processConf)
	path := filepath.Join(t.TempDir(), "tern.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	pid := filepath.Join(t.TempDir(), "tern.pid")
	p := startProcess(t, port, "-c", path, "-P", pid)
	return p, pid
}

func TestProcessCLI(t *testing.T) {
	cli := natsCLI(t)
	p, _ := startConfProcess(t)
	app := []string{"-s", p.url(), "--user", "app", "--password", "app"}

	// nats sub in the background, nats pub from the CLI.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	sub := exec.CommandContext(ctx, cli, append(app, "sub", "cli.test", "--count", "1", "--raw")...)
	sub.Env = append(os.Environ(), "HOME="+t.TempDir())
	var subOut strings.Builder
	sub.Stdout, sub.Stderr = &subOut, &subOut
	if err := sub.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "cli subscription", func() bool { return subInterest(t, p, "cli.test") })
	runCLI(t, cli, append(app, "pub", "cli.test", "hello-from-cli")...)
	if err := sub.Wait(); err != nil || !strings.Contains(subOut.String(), "hello-from-cli") {
		t.Fatalf("nats sub: %v\n%s", err, subOut.String())
	}

	// nats reply + nats req.
	rep := exec.CommandContext(ctx, cli, append(app, "reply", "cli.svc", "pong", "--count", "1")...)
	rep.Env = sub.Env
	if err := rep.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "cli responder", func() bool { return subInterest(t, p, "cli.svc") })
	out := runCLI(t, cli, append(app, "req", "cli.svc", "ping", "--raw")...)
	if !strings.Contains(out, "pong") {
		t.Fatalf("nats req: %s", out)
	}
	_ = rep.Wait()

	// nats server ping through the system account.
	out = runCLI(t, cli, "-s", p.url(), "--user", "sys", "--password", "sys", "server", "ping", "1")
	if !strings.Contains(out, "tern-proc") {
		t.Fatalf("nats server ping: %s", out)
	}
}

// subInterest asks the process' monitoring endpoint whether subject has a
// subscriber, via $SYS-free HTTP so it works for any account.
func subInterest(t *testing.T, p *serverProcess, subject string) bool {
	nc, err := nats.Connect(p.url(), nats.UserInfo("sys", "sys"))
	if err != nil {
		return false
	}
	defer nc.Close()
	resp, err := nc.Request("$SYS.REQ.SERVER.PING.CONNZ", []byte(`{"subscriptions":true}`), time.Second)
	if err != nil {
		return false
	}
	return strings.Contains(string(resp.Data), `"`+subject+`"`)
}

func TestProcessNATSClientAndSignals(t *testing.T) {
	p, pidFile := startConfProcess(t)
	nc := connectNATS(t, p.url(), nats.UserInfo("app", "app"))
	sub, _ := nc.SubscribeSync("x")
	nc.Publish("x", []byte("1"))
	if _, err := sub.NextMsg(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil || strings.TrimSpace(string(b)) != itoa(p.cmd.Process.Pid) {
		t.Fatalf("pid file %q: %v", b, err)
	}
	// SIGHUP reloads and keeps serving.
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "reload log line", func() bool {
		return strings.Contains(p.output(), "Reloaded server configuration")
	})
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// --signal ldm=<pidfile>: clients are told (INFO ldm) before the close.
	ldm := make(chan struct{}, 1)
	nc2 := connectNATS(t, p.url(), nats.UserInfo("app", "app"), nats.NoReconnect(),
		nats.LameDuckModeHandler(func(*nats.Conn) { ldm <- struct{}{} }))
	_ = nc2
	out, err := exec.Command(serverBinary(t), "--signal", "ldm="+pidFile).CombinedOutput()
	if err != nil {
		t.Fatalf("--signal ldm: %v %s", err, out)
	}
	select {
	case <-ldm:
	case <-time.After(5 * time.Second):
		t.Fatalf("no lame duck notification\n%s", p.output())
	}
	// SIGTERM is ignored in lame duck mode; SIGINT shuts down.
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("process did not exit on SIGINT")
	}
}

func TestProcessConfigCheckAndVersion(t *testing.T) {
	bin := serverBinary(t)
	out, err := exec.Command(bin, "-v").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "nats-server: v"+VERSION) {
		t.Fatalf("-v: %v %q", err, out)
	}
	good := filepath.Join(t.TempDir(), "good.conf")
	os.WriteFile(good, []byte("port: 4999\nmax_payload: 2MB\n"), 0o644)
	out, err = exec.Command(bin, "-t", "-c", good).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "is valid") {
		t.Fatalf("-t good: %v %s", err, out)
	}
	bad := filepath.Join(t.TempDir(), "bad.conf")
	os.WriteFile(bad, []byte("port: 4999\nauthorization {\n  user: \"unterminated\n}\n"), 0o644)
	out, err = exec.Command(bin, "-t", "-c", bad).CombinedOutput()
	if err == nil || !strings.Contains(string(out), bad+":") {
		t.Fatalf("-t bad should fail naming file:line:col: %v %s", err, out)
	}
}

func TestProcessMonitoringHealthz(t *testing.T) {
	port, httpPort := freePort(t), freePort(t)
	startProcess(t, port, "-a", "127.0.0.1", "-p", itoa(port), "-m", itoa(httpPort))
	resp, err := httpGet("http://127.0.0.1:" + itoa(httpPort) + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	if err := json.Unmarshal(resp, &h); err != nil || h["status"] != "ok" || len(h) != 1 {
		t.Fatalf("healthz %s %v", resp, err)
	}
}
