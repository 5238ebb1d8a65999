package server

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

const reloadPermsConf = `listen: "127.0.0.1:-1"
authorization {
  users = [
    {user: admin, password: admin}
    {user: u, password: u, permissions: {publish: {allow: [%s]}, subscribe: {allow: [%s]}}}
    %s
  ]
}
`

func reloadPermsWrite(t *testing.T, path, allow, extra string) {
	t.Helper()
	body := strings.Replace(reloadPermsConf, "%s", allow, 1)
	body = strings.Replace(body, "%s", allow, 1)
	body = strings.Replace(body, "%s", extra, 1)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A reload that narrows a user's permissions removes the subscriptions no
// longer allowed (with nats-server's -ERR naming each), applies the new
// publish permissions at once, and disconnects a user it removed.
func TestReloadNarrowsPermissions(t *testing.T) {
	dir := t.TempDir()
	f := optsWriteConf(t, dir, "p.conf", "")
	reloadPermsWrite(t, f, `"public.>", "secret.>"`, `{user: gone, password: gone}`)
	o, err := ProcessConfigFile(f)
	if err != nil {
		t.Fatal(err)
	}
	o.NoLog, o.NoSigs = true, true
	s := runServer(t, o)

	raw := dialRaw(t, s)
	raw.connect(`{"verbose":false,"pedantic":false,"user":"u","pass":"u"}`)
	raw.send("SUB secret.> 1\r\nSUB public.> 2\r\nSUB public.q 3 workers\r\n")
	protoFlush(raw)

	admin, err := nats.Connect(s.ClientURL(), nats.UserInfo("admin", "admin"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	adminSecret, err := admin.SubscribeSync("secret.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Flush(); err != nil { // counted in "before" below
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	u, err := nats.Connect(s.ClientURL(), nats.UserInfo("u", "u"),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	goneClosed := make(chan struct{})
	gone, err := nats.Connect(s.ClientURL(), nats.UserInfo("gone", "gone"), nats.MaxReconnects(0),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}),
		nats.ClosedHandler(func(*nats.Conn) { close(goneClosed) }))
	if err != nil {
		t.Fatal(err)
	}
	defer gone.Close()

	before := s.NumSubscriptions()
	reloadPermsWrite(t, f, `"public.>"`, "")
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	raw.expect("-ERR 'Permissions Violation for Subscription to \"secret.>\" (sid \"1\")'\r\n")
	protoFlush(raw)
	// Nothing of secret.> reaches the raw client any more; public.> does.
	for _, subj := range []string{"secret.x", "public.x"} {
		if err := admin.Publish(subj, []byte("m")); err != nil {
			t.Fatal(err)
		}
	}
	if err := admin.Flush(); err != nil {
		t.Fatal(err)
	}
	raw.expect("MSG public.x 2 1\r\nm\r\n")
	protoFlush(raw)
	if n := s.NumSubscriptions(); n != before-1 {
		t.Fatalf("subscriptions after reload = %d, want %d", n, before-1)
	}

	// Publish permissions: secret.y is refused under the new ones.
	if _, err := adminSecret.NextMsg(time.Second); err != nil { // admin's own secret.x
		t.Fatal(err)
	}
	if err := u.Publish("secret.y", []byte("leak")); err != nil {
		t.Fatal(err)
	}
	if err := u.Flush(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		if !strings.Contains(err.Error(), `Permissions Violation for Publish to "secret.y"`) {
			t.Fatalf("u's publish error = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no permissions violation for u's publish after the reload")
	}
	// admin's PONG leaves after anything u's publish queued for it.
	if err := admin.Flush(); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := adminSecret.Pending(); n != 0 {
		t.Fatalf("admin received %d messages published by u after the reload", n)
	}

	// The removed user is disconnected.
	select {
	case <-goneClosed:
	case <-time.After(5 * time.Second):
		t.Fatal("removed user still connected after reload")
	}
}
