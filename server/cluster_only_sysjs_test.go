package server

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// With JetStream enabled for the system account, a system user made a
// push consumer deliver to $JSC.MCOPY and stored forged copies in its
// stream: the consumer's leader delivered them as the server's own
// publishes (no client connection), which the meta leader took for copies
// of held writes, creating and deleting streams of any account (commit
// 861f4be has that forgery as a test). As in nats-server, JetStream
// cannot be enabled for the system account, whether the system account
// is named or the default one: the server's Start logs nats-server's
// fatal line for it, word for word, and runs nothing (no JetStream, no
// client listener).
func TestJetStreamClusterMetaCopyNotThroughSystemStream(t *testing.T) {
	for _, name := range []string{"SYS", DEFAULT_SYSTEM_ACCOUNT} {
		o := testOptions()
		o.ServerName, o.JetStream, o.StoreDir = "S1", true, t.TempDir()
		a, sys := NewAccount("A"), NewAccount(name)
		a.jetstream, sys.jetstream = true, true
		o.Accounts = []*Account{a, sys}
		if name != DEFAULT_SYSTEM_ACCOUNT {
			o.SystemAccount = name
		}
		o.Users = []*User{{Username: "a", Password: "a", Account: a}, {Username: "sys", Password: "sys", Account: sys}}
		s, err := NewServer(o)
		if err != nil {
			t.Fatalf("system account %s: NewServer: %v (nats-server accepts the options and refuses at start)", name, err)
		}
		fatal := &fatalLog{}
		s.SetLogger(fatal, false, false)
		s.Start()
		t.Cleanup(s.Shutdown)
		if got := fatal.last(); got != "Not allowed to enable JetStream on the system account" {
			t.Errorf("system account %s: fatal log %q", name, got)
		}
		if s.ReadyForConnections(100*time.Millisecond) || s.js.Load() != nil {
			t.Errorf("system account %s: the server runs (JetStream: %v)", name, s.js.Load() != nil)
		}
	}
}

// The process logs the refusal as nats-server v2.15.2 does, at the fatal
// level ([FTL]), and exits with status 1.
func TestProcessSystemJetStreamRefused(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "sys.conf")
	err := os.WriteFile(conf, []byte("listen: 127.0.0.1:-1\njetstream { store_dir: \""+filepath.Join(dir, "js")+"\" }\n"+
		"system_account: SYS\naccounts {\n  SYS { jetstream: enabled, users: [{user: sys, password: sys}] }\n"+
		"  A { jetstream: enabled, users: [{user: a, password: a}] }\n}\n"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(serverBinary(t), "-c", conf)
	done := make(chan struct{})
	var out []byte
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the server did not exit: %s", out)
	}
	last := strings.TrimSpace(string(out))
	last = last[strings.LastIndexByte(last, '\n')+1:]
	if !strings.HasSuffix(last, " [FTL] Not allowed to enable JetStream on the system account") || cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("exit %d, last line %q", cmd.ProcessState.ExitCode(), last)
	}
}

// An embedder whose logger does not exit on Fatalf (as nats-server's
// loggers do) gets a server that refused to start and runs nothing: as in
// nats-server, whose Start refuses JetStream in the system account before
// it listens for routes, no cluster listener is open and no route is
// solicited, so the refused server does not join the cluster as a route
// without JetStream. It did: Start refused after opening the cluster
// listener (the process's log showed "Listening for route connections"
// before the [FTL] line), which stayed open until Shutdown.
func TestSystemJetStreamRefusedBeforeRoutes(t *testing.T) {
	peerPort, ownPort := freePort(t), freePort(t)
	routes := []*url.URL{{Scheme: "nats-route", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)}}
	po := testOptions()
	po.ServerName, po.Cluster.Name, po.Cluster.Host, po.Cluster.Port = "P", "JSC", "127.0.0.1", peerPort
	runServer(t, po) // a peer the refused server's routes name

	o := testOptions()
	o.ServerName, o.JetStream, o.StoreDir = "S1", true, t.TempDir()
	o.Cluster.Name, o.Cluster.Host, o.Cluster.Port, o.Routes = "JSC", "127.0.0.1", ownPort, routes
	sys := NewAccount("SYS")
	sys.jetstream = true
	o.Accounts, o.SystemAccount = []*Account{sys}, "SYS"
	s, err := NewServer(o)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	fatal := &fatalLog{}
	s.SetLogger(fatal, false, false)
	s.Start()
	if got := fatal.last(); got != sysJetStreamRefusal {
		t.Fatalf("fatal log %q", got)
	}
	if a := s.ClusterAddr(); a != nil {
		t.Errorf("the refused server listens for routes on %v", a)
	}
	if s.ReadyForConnections(50 * time.Millisecond) {
		t.Errorf("the refused server is ready for connections")
	}
	done := make(chan struct{})
	go func() { s.Shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown of the refused server did not return")
	}
}
