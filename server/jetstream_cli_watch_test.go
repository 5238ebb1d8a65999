package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cliWatch starts a long-running nats CLI command (a watch) against s and
// returns its output lines as they come; the process ends with the test.
func cliWatch(t *testing.T, cli string, s *Server, args ...string) <-chan string {
	t.Helper()
	c, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(c, cli, append([]string{"-s", s.ClientURL()}, args...)...)
	cmd.Env = append(os.Environ(), "NATS_CONTEXT=", "HOME="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	t.Cleanup(func() { cancel(); cmd.Wait() })
	return lines
}

// expectLine waits for a line containing want.
func expectLine(t *testing.T, lines <-chan string, want string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("command ended before a line with %q", want)
			}
			if strings.Contains(l, want) {
				return
			}
		case <-deadline:
			t.Fatalf("no line with %q", want)
		}
	}
}

func TestJSCLIKVWatchHistoryLs(t *testing.T) {
	cli := natsCLI(t)
	s := runJSServer(t)
	nats := cliAgainst(t, cli, s)
	nats("kv", "add", "B", "--history", "5")
	nats("kv", "put", "B", "k", "v1")
	nats("kv", "put", "B", "k", "v2")
	nats("kv", "put", "B", "j", "x")
	out := nats("kv", "history", "B", "k")
	if !strings.Contains(out, "v1") || !strings.Contains(out, "v2") {
		t.Fatalf("kv history:\n%s", out)
	}
	if out := nats("kv", "ls", "B"); !strings.Contains(out, "k") || !strings.Contains(out, "j") {
		t.Fatalf("kv ls B:\n%s", out)
	}
	w := cliWatch(t, cli, s, "kv", "watch", "B")
	expectLine(t, w, "PUT B > k: v2")
	expectLine(t, w, "PUT B > j: x")
	nats("kv", "put", "B", "new", "hello")
	expectLine(t, w, "PUT B > new: hello")
	nats("kv", "del", "B", "j", "-f")
	expectLine(t, w, "DELETE B > j")
}

func TestJSCLIObjectPutGetLs(t *testing.T) {
	cli := natsCLI(t)
	s := runJSServer(t)
	nats := cliAgainst(t, cli, s)
	dir := t.TempDir()
	data := make([]byte, 3<<20)
	rand.Read(data)
	in, out := filepath.Join(dir, "in.bin"), filepath.Join(dir, "out.bin")
	os.WriteFile(in, data, 0o600)
	nats("object", "add", "OB")
	nats("object", "put", "OB", in, "--name", "f")
	nats("object", "get", "OB", "f", "-O", out)
	if got, err := os.ReadFile(out); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("object get: %v (%d bytes)", err, len(got))
	}
	if ls := nats("object", "ls", "OB"); !strings.Contains(ls, "f ") || !strings.Contains(ls, "3.0 MiB") {
		t.Fatalf("object ls:\n%s", ls)
	}
	nats("object", "rm", "OB", "f", "-f")
	if ls := nats("object", "ls", "OB"); !strings.Contains(ls, "No entries found") {
		t.Fatalf("object ls after rm:\n%s", ls)
	}
}
