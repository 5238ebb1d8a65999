package server

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// A reload that adds an account registers it: its users log in to it (not
// to $G), its imports work and JetStream is on for it when it asks. A
// reload that removes an account disconnects its clients and refuses its
// users; its streams stay on disk and come back when it is added again.
func TestReloadAddsAccount(t *testing.T) {
	dir := t.TempDir()
	one := "listen: \"127.0.0.1:-1\"\njetstream { store_dir: %q }\naccounts {\n  A { jetstream: enabled, users = [{user: a, password: a}], exports = [{stream: \"news.>\"}] }\n%s}\n"
	write := func(extra string) string {
		return strings.Replace(strings.Replace(one, "%q", `"`+dir+`"`, 1), "%s", extra, 1)
	}
	f := optsWriteConf(t, dir, "acc.conf", write(""))
	o, err := ProcessConfigFile(f)
	if err != nil {
		t.Fatal(err)
	}
	o.NoLog, o.NoSigs = true, true
	s := runServer(t, o)
	if _, err := nats.Connect(s.ClientURL(), nats.UserInfo("b", "b"), nats.MaxReconnects(0)); err == nil {
		t.Fatal("b logged in before its account was added")
	}

	added := "  B { jetstream: enabled, users = [{user: b, password: b}], imports = [{stream: {account: A, subject: \"news.>\"}}] }\n"
	if err := os.WriteFile(f, []byte(write(added)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatalf("Reload adding account B: %v", err)
	}
	if acc, err := s.LookupAccount("B"); err != nil || acc.Name != "B" {
		t.Fatalf("LookupAccount(B) = %v, %v", acc, err)
	}
	nb, err := nats.Connect(s.ClientURL(), nats.UserInfo("b", "b"), nats.MaxReconnects(0))
	if err != nil {
		t.Fatalf("b after reload: %v", err)
	}
	defer nb.Close()
	sub, err := nb.SubscribeSync("news.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nb.Flush(); err != nil {
		t.Fatal(err)
	}
	na, err := nats.Connect(s.ClientURL(), nats.UserInfo("a", "a"), nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	defer na.Close()
	if err := na.Publish("news.1", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if m, err := sub.NextMsg(2 * time.Second); err != nil || string(m.Data) != "x" {
		t.Fatalf("import into the added account: %v %v", m, err)
	}
	js, err := nb.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.AddStream(&nats.StreamConfig{Name: "B1", Subjects: []string{"b1"}}); err != nil {
		t.Fatalf("JetStream in the added account: %v", err)
	}

	if _, err := js.Publish("b1", []byte("kept")); err != nil {
		t.Fatal(err)
	}

	closed := make(chan struct{})
	nb.SetClosedHandler(func(*nats.Conn) { close(closed) })
	if err := os.WriteFile(f, []byte(write("")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatalf("reload removing B: %v", err)
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("B's client still connected after B was removed")
	}
	if _, err := nats.Connect(s.ClientURL(), nats.UserInfo("b", "b"), nats.MaxReconnects(0)); err == nil {
		t.Fatal("b logged in after B was removed")
	}
	if err := na.Publish("news.2", []byte("y")); err != nil || na.Flush() != nil {
		t.Fatalf("A after B was removed: %v", err)
	}

	if err := os.WriteFile(f, []byte(write(added)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatalf("reload adding B back: %v", err)
	}
	nb2, err := nats.Connect(s.ClientURL(), nats.UserInfo("b", "b"), nats.MaxReconnects(0))
	if err != nil {
		t.Fatalf("b after B came back: %v", err)
	}
	defer nb2.Close()
	js2, _ := nb2.JetStream()
	if m, err := js2.GetMsg("B1", 1); err != nil || string(m.Data) != "kept" {
		t.Fatalf("B's stream after B came back: %v %v", m, err)
	}
}
