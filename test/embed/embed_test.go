package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/conf"
	"github.com/nats-io/nats-server/v2/logger"
	"github.com/nats-io/nats-server/v2/server"
	natsserver "github.com/nats-io/nats-server/v2/test"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// These tests are written as a program embedding upstream nats-server
// writes them: nothing here knows it runs against Tern.

func TestMainProgram(t *testing.T) {
	if err := run(); err != nil {
		t.Fatal(err)
	}
}

func startFromOptions(t *testing.T, opts *server.Options) *server.Server {
	t.Helper()
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready for connections")
	}
	t.Cleanup(func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	return ns
}

func TestEmbeddedJetStreamFromOptions(t *testing.T) {
	dir := t.TempDir()
	ns := startFromOptions(t, &server.Options{
		ServerName: "emb-1",
		Host:       "127.0.0.1",
		Port:       server.RANDOM_PORT,
		HTTPHost:   "127.0.0.1",
		HTTPPort:   server.RANDOM_PORT,
		JetStream:  true,
		StoreDir:   dir,
		NoLog:      true,
		NoSigs:     true,
	})
	if !ns.Running() || !ns.JetStreamEnabled() || ns.Name() != "emb-1" || ns.ID() == "" {
		t.Fatalf("running=%v js=%v name=%q id=%q", ns.Running(), ns.JetStreamEnabled(), ns.Name(), ns.ID())
	}
	if want := filepath.Join(dir, "jetstream"); ns.StoreDir() != want || ns.JetStreamConfig().StoreDir != want {
		t.Fatalf("StoreDir %q, JetStreamConfig %+v, want %q", ns.StoreDir(), ns.JetStreamConfig(), want)
	}
	if ns.Addr() == nil || ns.MonitorAddr() == nil || !strings.HasPrefix(ns.ClientURL(), "nats://127.0.0.1:") {
		t.Fatalf("Addr %v MonitorAddr %v ClientURL %q", ns.Addr(), ns.MonitorAddr(), ns.ClientURL())
	}

	nc, err := nats.Connect(ns.ClientURL(), nats.Name("embedder"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		ack, err := js.Publish(ctx, "orders.new", []byte("o"))
		if err != nil || ack.Sequence != uint64(i) {
			t.Fatalf("publish %d: %+v %v", i, ack, err)
		}
	}
	// Compare-and-set: a second writer with the same expectation loses.
	if _, err := js.Publish(ctx, "orders.new", []byte("late"), jetstream.WithExpectLastSequencePerSubject(2)); err == nil {
		t.Fatal("publish with a stale expected subject sequence succeeded")
	}
	if _, err := nc.SubscribeSync("watch.>"); err != nil || nc.Flush() != nil {
		t.Fatal(err)
	}

	jsz, err := ns.Jsz(nil)
	if err != nil || jsz.Streams != 1 || jsz.Messages != 3 {
		t.Fatalf("Jsz %+v %v", jsz, err)
	}
	vz, err := ns.Varz(nil)
	if err != nil || vz.Connections != 1 || vz.InMsgs < 3 || vz.JetStream.Config == nil {
		t.Fatalf("Varz connections=%d in_msgs=%d jetstream=%+v err=%v", vz.Connections, vz.InMsgs, vz.JetStream, err)
	}
	cz, err := ns.Connz(&server.ConnzOptions{Subscriptions: true, Sort: server.ByCid})
	if err != nil || cz.NumConns != 1 || cz.Conns[0].Name != "embedder" {
		t.Fatalf("Connz %+v %v", cz, err)
	}
	if ns.NumClients() != 1 || ns.NumSubscriptions() == 0 || ns.NumRoutes() != 0 {
		t.Fatalf("clients %d subs %d routes %d", ns.NumClients(), ns.NumSubscriptions(), ns.NumRoutes())
	}
	if ns.GlobalAccount() == nil || ns.SystemAccount() == nil {
		t.Fatal("no global or system account")
	}
	if acc, err := ns.LookupAccount(ns.GlobalAccount().Name); err != nil || acc != ns.GlobalAccount() {
		t.Fatalf("LookupAccount: %v %v", acc, err)
	}

	ns.Shutdown()
	ns.WaitForShutdown()
	if ns.Running() {
		t.Fatal("still running after Shutdown")
	}

	// The same store directory serves the stream again after a restart.
	ns2 := startFromOptions(t, &server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	nc2, err := nats.Connect(ns2.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	js2, _ := jetstream.New(nc2)
	s, err := js2.Stream(ctx, "ORDERS")
	if err != nil {
		t.Fatal(err)
	}
	if info, err := s.Info(ctx); err != nil || info.State.Msgs != 3 {
		t.Fatalf("after restart: %+v %v", info, err)
	}
}

func writeConfig(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestEmbeddedFromConfigFileAndReload(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "server.conf")
	body := `listen: "127.0.0.1:-1"
server_name: conf-1
jetstream { store_dir: "` + dir + `" }
accounts {
  APP { jetstream: enabled, users = [{user: app, password: %s}] }
}
`
	writeConfig(t, cfg, strings.Replace(body, "%s", "one", 1))
	opts, err := server.ProcessConfigFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	opts.NoLog, opts.NoSigs = true, true
	ns := startFromOptions(t, opts)
	if ns.Name() != "conf-1" || !ns.JetStreamEnabled() {
		t.Fatalf("name %q js %v", ns.Name(), ns.JetStreamEnabled())
	}
	connect := func(pass string) (*nats.Conn, error) {
		return nats.Connect(ns.ClientURL(), nats.UserInfo("app", pass), nats.MaxReconnects(0))
	}
	nc, err := connect("one")
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()

	writeConfig(t, cfg, strings.Replace(body, "%s", "two", 1))
	if err := ns.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if _, err := connect("one"); err == nil {
		t.Fatal("old password accepted after reload")
	}
	nc, err = connect("two")
	if err != nil {
		t.Fatalf("new password after reload: %v", err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "CFG"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if e, err := kv.Get(ctx, "k"); err != nil || string(e.Value()) != "v" {
		t.Fatalf("kv get: %v %v", e, err)
	}

	// ReloadOptions with options built in code.
	o2 := opts.Clone()
	o2.MaxPayload = 512
	if err := ns.ReloadOptions(o2); err != nil {
		t.Fatalf("ReloadOptions: %v", err)
	}
	if vz, err := ns.Varz(nil); err != nil || vz.MaxPayload != 512 {
		t.Fatalf("max_payload after ReloadOptions: %d %v", vz.MaxPayload, err)
	}
	// A change that needs a restart is refused with an error.
	o3 := opts.Clone()
	o3.ServerName = "renamed"
	if err := ns.ReloadOptions(o3); err == nil {
		t.Fatal("renaming a running server by reload succeeded")
	}

	// The options method reads the same file.
	var o4 server.Options
	if err := o4.ProcessConfigFile(cfg); err != nil || o4.ServerName != "conf-1" {
		t.Fatalf("(*Options).ProcessConfigFile: %v %q", err, o4.ServerName)
	}
}

// logRecorder is a server.Logger that keeps what it is given.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (l *logRecorder) add(format string, v []any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, format)
}
func (l *logRecorder) Noticef(f string, v ...any) { l.add(f, v) }
func (l *logRecorder) Warnf(f string, v ...any)   { l.add(f, v) }
func (l *logRecorder) Fatalf(f string, v ...any)  { l.add(f, v) }
func (l *logRecorder) Errorf(f string, v ...any)  { l.add(f, v) }
func (l *logRecorder) Debugf(f string, v ...any)  { l.add(f, v) }
func (l *logRecorder) Tracef(f string, v ...any)  { l.add(f, v) }

func (l *logRecorder) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lines)
}

func TestEmbeddedLoggersAndInProcess(t *testing.T) {
	ns, err := server.NewServer(&server.Options{DontListen: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	rec := &logRecorder{}
	ns.SetLoggerV2(rec, true, false, false)
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("not ready")
	}
	defer ns.WaitForShutdown()
	defer ns.Shutdown()
	if rec.count() == 0 {
		t.Fatal("the logger set with SetLoggerV2 got nothing")
	}
	nc, err := nats.Connect("", nats.InProcessServer(ns))
	if err != nil {
		t.Fatalf("in-process connection: %v", err)
	}
	defer nc.Close()
	if resp, err := nc.Request("nobody", nil, time.Second); err == nil {
		t.Fatalf("request without responders answered: %v", resp)
	}
	// The logger package's standard logger plugs in the same way.
	ns.SetLogger(logger.NewStdLogger(false, false, false, false, false), false, false)
}

func TestTestHelpers(t *testing.T) {
	s := natsserver.RunRandClientPortServer()
	defer s.Shutdown()
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()

	opts := natsserver.DefaultTestOptions
	opts.Port = server.RANDOM_PORT
	opts.JetStream = true
	opts.StoreDir = t.TempDir()
	s2 := natsserver.RunServer(&opts)
	defer s2.Shutdown()
	if !s2.JetStreamEnabled() {
		t.Fatal("RunServer did not enable JetStream")
	}

	cfg := filepath.Join(t.TempDir(), "t.conf")
	writeConfig(t, cfg, "listen: 127.0.0.1:-1\nmax_payload: 2048\n")
	s3, o3 := natsserver.RunServerWithConfig(cfg)
	defer s3.Shutdown()
	if o3.MaxPayload != 2048 || natsserver.LoadConfig(cfg).MaxPayload != 2048 {
		t.Fatalf("max_payload %d", o3.MaxPayload)
	}
}

func TestConfParser(t *testing.T) {
	m, err := conf.Parse("port: 4222\nauthorization { user: a, password: $PW }\nPW = secret\n")
	if err == nil {
		t.Fatalf("a variable used before it is defined parsed: %v", m)
	}
	m, err = conf.Parse("PW = secret\nport: 4222\nauthorization { user: a, password: $PW }\n")
	if err != nil {
		t.Fatal(err)
	}
	auth := m["authorization"].(map[string]any)
	if m["port"] != int64(4222) || auth["password"] != "secret" {
		t.Fatalf("parsed %v", m)
	}
	cfg := filepath.Join(t.TempDir(), "c.conf")
	writeConfig(t, cfg, "max_payload: 1MB\n")
	if m, err := conf.ParseFile(cfg); err != nil || m["max_payload"] != int64(1024*1024) {
		t.Fatalf("ParseFile: %v %v", m, err)
	}
	if m, err := conf.ParseFileWithChecks(cfg); err != nil || m["max_payload"] == nil {
		t.Fatalf("ParseFileWithChecks: %v %v", m, err)
	}
}
