package server

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// A service import with `to` maps the importer's subject to the exported
// one, wildcard tokens in order; the exporter never receives a subject
// outside its exports (issue 16: `to: "adm.*"` delivered adm.shutdown).
func TestServiceImportToMapsToExportedSubject(t *testing.T) {
	conf := `listen: "127.0.0.1:-1"
accounts {
  A {
    users = [{user: a, password: a}]
    exports = [{service: "svc.*"}, {service: "tail.>"}, {service: "one.status"}]
  }
  B {
    users = [{user: b, password: b}]
    imports = [
      {service: {account: A, subject: "svc.*"}, to: "adm.*"}
      {service: {account: A, subject: "tail.>"}, to: "t.>"}
      {service: {account: A, subject: "one.status"}, to: "st.*"}
    ]
  }
}
`
	o, err := ProcessConfigFile(optsWriteConf(t, t.TempDir(), "imp.conf", conf))
	if err != nil {
		t.Fatal(err)
	}
	o.NoLog, o.NoSigs = true, true
	s := runServer(t, o)

	na, err := nats.Connect(s.ClientURL(), nats.UserInfo("a", "a"))
	if err != nil {
		t.Fatal(err)
	}
	defer na.Close()
	got := make(chan string, 16)
	if _, err := na.Subscribe(">", func(m *nats.Msg) {
		if strings.HasPrefix(m.Subject, "_R_.") {
			return // A's own responses, routed back to B
		}
		got <- m.Subject
		_ = m.Respond([]byte("re:" + m.Subject))
	}); err != nil {
		t.Fatal(err)
	}
	if err := na.Flush(); err != nil {
		t.Fatal(err)
	}
	nb, err := nats.Connect(s.ClientURL(), nats.UserInfo("b", "b"))
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()

	for _, c := range []struct{ pub, want string }{
		{"adm.shutdown", "svc.shutdown"},
		{"t.a.b.c", "tail.a.b.c"},
		{"st.anything", "one.status"},
	} {
		m, err := nb.Request(c.pub, []byte("x"), 2*time.Second)
		if err != nil {
			t.Fatalf("request %s: %v", c.pub, err)
		}
		if string(m.Data) != "re:"+c.want {
			t.Fatalf("request %s answered %q, want re:%s", c.pub, m.Data, c.want)
		}
		if subj := <-got; subj != c.want {
			t.Fatalf("exporter received %q for %q, want %q", subj, c.pub, c.want)
		}
	}
}

// A `to` whose wildcards cannot be mapped onto the exported subject is a
// config error, not an import that forwards wildcard subjects.
func TestServiceImportToWildcardMismatch(t *testing.T) {
	for _, imp := range []string{
		`{service: {account: A, subject: "svc.*"}, to: "adm.x"}`,
		`{service: {account: A, subject: "svc.*"}, to: "adm.*.*"}`,
		`{service: {account: A, subject: "svc.>"}, to: "adm.*"}`,
	} {
		conf := "listen: \"127.0.0.1:-1\"\naccounts {\n  A { users = [{user: a, password: a}], exports = [{service: \"svc.>\"}] }\n" +
			"  B { users = [{user: b, password: b}], imports = [" + imp + "] }\n}\n"
		o, err := ProcessConfigFile(optsWriteConf(t, t.TempDir(), "imp.conf", conf))
		if err != nil {
			t.Fatal(err)
		}
		o.NoLog, o.NoSigs = true, true
		if _, err := NewServer(o); err == nil || !strings.Contains(err.Error(), "failed to create mapping transform") {
			t.Fatalf("import %s: NewServer err = %v", imp, err)
		}
	}
}
