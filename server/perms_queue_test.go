package server

import (
	"strings"
	"testing"
)

// Queue-qualified subscribe permissions ("orders.> workers") allow or deny
// a subject for one queue group, as nats-server reads them, instead of
// standing for a literal subject with a space in it (issue 16).
func TestQueuePermissions(t *testing.T) {
	conf := `listen: "127.0.0.1:-1"
authorization {
  users = [
    {user: w, password: w, permissions: {subscribe: {allow: ["orders.> workers", "public.>", "jobs.* v1.*"]}}}
    {user: d, password: d, permissions: {subscribe: {deny: ["orders.> spies"]}}}
    {user: p, password: p}
  ]
}
`
	o, err := ProcessConfigFile(optsWriteConf(t, t.TempDir(), "q.conf", conf))
	if err != nil {
		t.Fatal(err)
	}
	o.NoLog, o.NoSigs = true, true
	s := runServer(t, o)

	w := protoDial(t, s, `{"verbose":false,"pedantic":false,"user":"w","pass":"w"}`)
	w.send("SUB orders.new workers 1\r\n")
	protoFlush(w)
	w.send("SUB orders.new 2\r\n")
	w.expect("-ERR 'Permissions Violation for Subscription to \"orders.new\"'\r\n")
	w.send("SUB orders.new others 3\r\n")
	w.expect("-ERR 'Permissions Violation for Subscription to \"orders.new\" using queue \"others\"'\r\n")
	w.send("SUB public.x anyq 4\r\nSUB jobs.a v1.x 5\r\n")
	protoFlush(w)
	w.send("SUB jobs.a v2 6\r\n")
	w.expect("-ERR 'Permissions Violation for Subscription to \"jobs.a\" using queue \"v2\"'\r\n")

	d := protoDial(t, s, `{"verbose":false,"pedantic":false,"user":"d","pass":"d"}`)
	d.send("SUB orders.new spies 1\r\n")
	d.expect("-ERR 'Permissions Violation for Subscription to \"orders.new\" using queue \"spies\"'\r\n")
	d.send("SUB orders.new 2\r\nSUB orders.new clerks 3\r\n")
	protoFlush(d)

	p := protoDial(t, s, `{"verbose":false,"pedantic":false,"user":"p","pass":"p"}`)
	p.send("PUB orders.new 2\r\nok\r\n")
	protoFlush(p)
	w.expect("MSG orders.new 1 2\r\nok\r\n")
	protoFlush(w)
	// d has a plain and a queue subscription: both get the message.
	got := d.line() + d.line() + d.line() + d.line()
	if strings.Count(got, "MSG orders.new ") != 2 {
		t.Fatalf("d received %q", got)
	}
	// A wildcard queue subscription is allowed, but what the queue deny
	// covers is not delivered to it.
	d.send("SUB > spies 4\r\n")
	protoFlush(d)
	p.send("PUB orders.x 1\r\na\r\nPUB other.x 1\r\nb\r\n")
	protoFlush(p)
	d.expect("MSG other.x 4 1\r\nb\r\n")
	protoFlush(d)
}

func TestQueuePermissionsConfigErrors(t *testing.T) {
	for _, perms := range []string{
		`{subscribe: ["orders.> workers extra"]}`,
		`{subscribe: {deny: ["orders..x workers"]}}`,
		`{publish: ["orders.> workers"]}`,
	} {
		conf := "authorization { users = [{user: u, password: u, permissions: " + perms + "}] }\n"
		_, err := ProcessConfigFile(optsWriteConf(t, t.TempDir(), "q.conf", conf))
		if err == nil || !strings.Contains(err.Error(), "is not a valid") {
			t.Fatalf("permissions %s: err = %v", perms, err)
		}
	}
}
