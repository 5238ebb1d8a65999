package server

import (
	"os"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

// A reload that would enable JetStream for the system account (by
// enabling it there, or by naming a JetStream account the system
// account) is refused with nats-server's words for it, and the running
// server goes on as it was: its accounts' JetStream still serves.
func TestReloadSystemJetStreamRefused(t *testing.T) {
	dir := t.TempDir()
	conf := "listen: \"127.0.0.1:-1\"\njetstream { store_dir: %q }\nsystem_account: %s\naccounts {\n" +
		"  SYS { %s users = [{user: sys, password: sys}] }\n  A { jetstream: enabled, users = [{user: a, password: a}] }\n}\n"
	write := func(sys, sysJS string) string {
		s := strings.Replace(conf, "%q", `"`+dir+`"`, 1)
		return strings.Replace(strings.Replace(s, "%s", sys, 1), "%s", sysJS, 1)
	}
	f := optsWriteConf(t, dir, "sys.conf", write("SYS", ""))
	o, err := ProcessConfigFile(f)
	if err != nil {
		t.Fatal(err)
	}
	o.NoLog, o.NoSigs = true, true
	s := runServer(t, o)
	for _, c := range []struct{ sys, sysJS string }{{"SYS", "jetstream: enabled,"}, {"A", ""}} {
		if err := os.WriteFile(f, []byte(write(c.sys, c.sysJS)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := s.Reload(); err == nil || !strings.Contains(err.Error(), sysJetStreamRefusal) {
			t.Fatalf("system account %s %q: reload error %v", c.sys, c.sysJS, err)
		}
	}
	if s.SystemAccount().Name != "SYS" || s.SystemAccount().jetstream {
		t.Fatalf("system account after the refused reloads: %s (JetStream %v)", s.SystemAccount().Name, s.SystemAccount().jetstream)
	}
	nc, err := nats.Connect(s.ClientURL(), nats.UserInfo("a", "a"), nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.AddStream(&nats.StreamConfig{Name: "S", Subjects: []string{"s"}}); err != nil {
		t.Fatalf("JetStream after the refused reloads: %v", err)
	}
	ns, err := nats.Connect(s.ClientURL(), nats.UserInfo("sys", "sys"), nats.MaxReconnects(0))
	if err != nil {
		t.Fatalf("the system user after the refused reloads: %v", err)
	}
	ns.Close()
}
