package test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

func TestRunRandClientPortServer(t *testing.T) {
	s := RunRandClientPortServer()
	defer s.Shutdown()
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, _ := nc.SubscribeSync("t")
	nc.Publish("t", []byte("ok"))
	if m, err := sub.NextMsg(2 * time.Second); err != nil || string(m.Data) != "ok" {
		t.Fatalf("%v %v", m, err)
	}
}

func TestRunServerWithConfig(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "s.conf")
	os.WriteFile(conf, []byte("listen: 127.0.0.1:-1\nauthorization { token: abc }\n"), 0o644)
	s, opts := RunServerWithConfig(conf)
	defer s.Shutdown()
	if opts.Authorization != "abc" {
		t.Fatalf("token %q", opts.Authorization)
	}
	if _, err := nats.Connect(s.ClientURL()); err == nil {
		t.Fatal("connected without token")
	}
	nc, err := nats.Connect(s.ClientURL(), nats.Token("abc"))
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
}

func TestRunServerWithConfigOverrides(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "o.conf")
	os.WriteFile(conf, []byte("listen: 127.0.0.1:4222\nserver_name: from-file\n"), 0o644)
	var seen string
	s, opts := RunServerWithConfigOverrides(conf, func(o *server.Options) {
		o.Port = server.RANDOM_PORT
	}, func(s *server.Server) { seen = s.Name() })
	defer s.Shutdown()
	if seen != "from-file" || opts.Port != server.RANDOM_PORT {
		t.Fatalf("callbacks: server %q, port %d", seen, opts.Port)
	}
	if _, err := nats.Connect(s.ClientURL()); err != nil {
		t.Fatal(err)
	}
}
