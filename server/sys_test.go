package server

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

const sysAccountsConf = `
listen: "127.0.0.1:-1"
server_name: sys-test

accounts {
  SYS {
    users: [{user: sys, password: sysp}]
  }
  A {
    users: [{user: ua, password: pa}]
    exports: [
      {service: "svc.>"}
      {stream: "events.>"}
    ]
  }
  B {
    users: [{user: ub, password: pb}]
    imports: [
      {service: {account: A, subject: "svc.>"}}
      {stream: {account: A, subject: "events.>"}, prefix: "from_a"}
    ]
  }
}
system_account: SYS
`

// sysRunConfigServer writes body to a config file, loads it with
// ProcessConfigFile and starts a server from it.
func sysRunConfigServer(t testing.TB, body string) (*Server, string) {
	t.Helper()
	f := optsWriteConf(t, t.TempDir(), "server.conf", body)
	o, err := ProcessConfigFile(f)
	if err != nil {
		t.Fatalf("ProcessConfigFile: %v", err)
	}
	o.NoLog, o.NoSigs = true, true
	return runServer(t, o), f
}

func sysConnectUser(t *testing.T, s *Server, user, pass string) *nats.Conn {
	t.Helper()
	return monConnect(t, s.ClientURL(), nats.UserInfo(user, pass))
}

// sysExpectNothing checks that sub has no message once everything the server
// could have routed to it has arrived: a routed message would be queued
// before the PONG that answers the flush.
func sysExpectNothing(t *testing.T, nc *nats.Conn, sub *nats.Subscription) {
	t.Helper()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := sub.Pending(); n != 0 {
		m, _ := sub.NextMsg(0)
		t.Fatalf("unexpected message on %q: %+v", sub.Subject, m)
	}
}

func sysRequest(t *testing.T, nc *nats.Conn, subject string, body []byte) map[string]any {
	t.Helper()
	m, err := nc.Request(subject, body, 5*time.Second)
	if err != nil {
		t.Fatalf("request %s: %v", subject, err)
	}
	var resp map[string]any
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		t.Fatalf("request %s: decoding %s: %v", subject, m.Data, err)
	}
	return resp
}

func sysCheckServerInfo(t *testing.T, s *Server, resp map[string]any) {
	t.Helper()
	si, ok := resp["server"].(map[string]any)
	if !ok {
		t.Fatalf("response lacks server: %v", resp)
	}
	if si["id"] != s.ID() || si["name"] != "sys-test" || si["ver"] != VERSION {
		t.Errorf("server = %v", si)
	}
	if _, ok := si["time"]; !ok {
		t.Errorf("server lacks time: %v", si)
	}
}

func TestSysServerPing(t *testing.T) {
	s, _ := sysRunConfigServer(t, sysAccountsConf)
	if sa := s.SystemAccount(); sa == nil || sa.Name != "SYS" {
		t.Fatalf("system account = %v", sa)
	}
	nc := sysConnectUser(t, s, "sys", "sysp")

	resp := sysRequest(t, nc, "$SYS.REQ.SERVER.PING", nil)
	sysCheckServerInfo(t, s, resp)
	st, ok := resp["statsz"].(map[string]any)
	if !ok {
		t.Fatalf("PING response lacks statsz: %v", resp)
	}
	for _, k := range []string{"start", "mem", "cores", "cpu", "connections", "total_connections",
		"active_accounts", "subscriptions", "sent", "received", "slow_consumers"} {
		if _, ok := st[k]; !ok {
			t.Errorf("statsz lacks %q: %v", k, st)
		}
	}
	if st["connections"] != float64(1) {
		t.Errorf("statsz connections = %v", st["connections"])
	}
	if _, ok := resp["data"]; ok {
		t.Errorf("PING response has data: %v", resp)
	}
	// STATSZ and the per-server subject answer the same way.
	for _, subj := range []string{"$SYS.REQ.SERVER.PING.STATSZ", "$SYS.REQ.SERVER." + s.ID() + ".STATSZ"} {
		resp := sysRequest(t, nc, subj, nil)
		sysCheckServerInfo(t, s, resp)
		if _, ok := resp["statsz"].(map[string]any); !ok {
			t.Errorf("%s lacks statsz: %v", subj, resp)
		}
	}
}

func TestSysServerPingEndpoints(t *testing.T) {
	s, _ := sysRunConfigServer(t, sysAccountsConf)
	nc := sysConnectUser(t, s, "sys", "sysp")

	data := func(resp map[string]any) map[string]any {
		t.Helper()
		d, ok := resp["data"].(map[string]any)
		if !ok {
			t.Fatalf("response lacks data: %v", resp)
		}
		return d
	}

	resp := sysRequest(t, nc, "$SYS.REQ.SERVER.PING.VARZ", nil)
	sysCheckServerInfo(t, s, resp)
	v := data(resp)
	if v["server_id"] != s.ID() || v["server_name"] != "sys-test" || v["system_account"] != "SYS" {
		t.Errorf("VARZ data = server_id %v name %v system_account %v", v["server_id"], v["server_name"], v["system_account"])
	}
	if _, ok := resp["statsz"]; ok {
		t.Errorf("VARZ response has statsz")
	}
	v = data(sysRequest(t, nc, "$SYS.REQ.SERVER."+s.ID()+".VARZ", nil))
	if v["server_id"] != s.ID() {
		t.Errorf("per-server VARZ = %v", v["server_id"])
	}

	// A second client so CONNZ has something to page.
	sysConnectUser(t, s, "ua", "pa")
	cz := data(sysRequest(t, nc, "$SYS.REQ.SERVER.PING.CONNZ", nil))
	if cz["server_id"] != s.ID() || cz["num_connections"] != float64(2) || cz["total"] != float64(2) {
		t.Errorf("CONNZ = %v", cz)
	}
	cz = data(sysRequest(t, nc, "$SYS.REQ.SERVER.PING.CONNZ", []byte(`{"limit":1,"offset":1,"auth":true}`)))
	conns, _ := cz["connections"].([]any)
	if cz["num_connections"] != float64(1) || cz["total"] != float64(2) || len(conns) != 1 {
		t.Fatalf("CONNZ paged = %v", cz)
	}
	if c := conns[0].(map[string]any); c["account"] != "A" || c["authorized_user"] != "ua" {
		t.Errorf("CONNZ second connection = %v", c)
	}

	h := data(sysRequest(t, nc, "$SYS.REQ.SERVER.PING.HEALTHZ", nil))
	if h["status"] != "ok" {
		t.Errorf("HEALTHZ = %v", h)
	}

	sz := data(sysRequest(t, nc, "$SYS.REQ.SERVER.PING.SUBSZ", nil))
	if _, ok := sz["num_subscriptions"]; !ok {
		t.Errorf("SUBSZ = %v", sz)
	}
	az := data(sysRequest(t, nc, "$SYS.REQ.SERVER.PING.ACCOUNTZ", nil))
	if az["system_account"] != "SYS" {
		t.Errorf("ACCOUNTZ = %v", az)
	}
	accs, _ := az["accounts"].([]any)
	var names []string
	for _, a := range accs {
		names = append(names, a.(string))
	}
	if got := strings.Join(names, ","); got != "$G,A,B,SYS" {
		t.Errorf("ACCOUNTZ accounts = %s", got)
	}
	rz := data(sysRequest(t, nc, "$SYS.REQ.SERVER.PING.ROUTEZ", nil))
	if rz["num_routes"] != float64(0) {
		t.Errorf("ROUTEZ = %v", rz)
	}
}

func TestSysSubjectsInvisibleToOtherAccounts(t *testing.T) {
	s, _ := sysRunConfigServer(t, sysAccountsConf)
	sys := sysConnectUser(t, s, "sys", "sysp")
	ua := sysConnectUser(t, s, "ua", "pa")

	// Requests from another account reach nobody.
	_, err := ua.Request("$SYS.REQ.SERVER.PING", nil, 2*time.Second)
	if !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("PING from account A: %v, want no responders", err)
	}
	_, err = ua.Request("$SYS.REQ.SERVER.PING.VARZ", nil, 2*time.Second)
	if !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("VARZ from account A: %v, want no responders", err)
	}

	// What the system account publishes on $SYS stays there.
	spy, err := ua.SubscribeSync("$SYS.>")
	if err != nil {
		t.Fatal(err)
	}
	own, err := sys.SubscribeSync("$SYS.custom.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := ua.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := sys.Publish("$SYS.custom.event", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := own.NextMsg(5 * time.Second); err != nil {
		t.Fatalf("system account did not see its own message: %v", err)
	}
	// A system request does not leak its response either.
	sysRequest(t, sys, "$SYS.REQ.SERVER.PING", nil)
	sysExpectNothing(t, ua, spy)
}

func TestAccountIsolation(t *testing.T) {
	s, _ := sysRunConfigServer(t, sysAccountsConf)
	ua := sysConnectUser(t, s, "ua", "pa")
	ub := sysConnectUser(t, s, "ub", "pb")

	subA, err := ua.SubscribeSync("iso.>")
	if err != nil {
		t.Fatal(err)
	}
	subB, err := ub.SubscribeSync("iso.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := ua.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := ub.Flush(); err != nil {
		t.Fatal(err)
	}

	// A publishes: A's own subscription gets it, B's does not.
	if err := ua.Publish("iso.a", []byte("from A")); err != nil {
		t.Fatal(err)
	}
	if m, err := subA.NextMsg(5 * time.Second); err != nil || string(m.Data) != "from A" {
		t.Fatalf("A did not receive its own message: %v", err)
	}
	sysExpectNothing(t, ub, subB)

	// And the other way round.
	if err := ub.Publish("iso.b", []byte("from B")); err != nil {
		t.Fatal(err)
	}
	if m, err := subB.NextMsg(5 * time.Second); err != nil || string(m.Data) != "from B" {
		t.Fatalf("B did not receive its own message: %v", err)
	}
	sysExpectNothing(t, ua, subA)

	// The global account is separate from both.
	if _, err := nats.Connect(s.ClientURL(), nats.Timeout(2*time.Second), nats.MaxReconnects(0)); err == nil {
		t.Fatalf("anonymous connection accepted although users are configured")
	}
}

func TestAccountServiceImportExport(t *testing.T) {
	s, _ := sysRunConfigServer(t, sysAccountsConf)
	ua := sysConnectUser(t, s, "ua", "pa")
	ub := sysConnectUser(t, s, "ub", "pb")

	seen := make(chan *nats.Msg, 4)
	_, err := ua.Subscribe("svc.echo", func(m *nats.Msg) {
		seen <- m
		_ = m.Respond(append([]byte("echo:"), m.Data...))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := ua.Flush(); err != nil {
		t.Fatal(err)
	}

	for i, body := range []string{"hi", "again"} {
		m, err := ub.Request("svc.echo", []byte(body), 5*time.Second)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if string(m.Data) != "echo:"+body {
			t.Fatalf("reply %d = %q", i, m.Data)
		}
		req := <-seen
		if req.Subject != "svc.echo" {
			t.Errorf("responder saw subject %q", req.Subject)
		}
		if req.Reply == "" || strings.HasPrefix(req.Reply, "_INBOX.") {
			t.Errorf("responder saw reply %q; B's inbox must be mapped", req.Reply)
		}
	}

	// A request with no responder in A gets no responders (or a timeout).
	_, err = ub.Request("svc.missing", []byte("x"), 2*time.Second)
	if !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("request to a service without responder: %v", err)
	}

	// The import is one-way: A cannot reach a service in B.
	if _, err := ub.Subscribe("b.svc", func(m *nats.Msg) { _ = m.Respond([]byte("nope")) }); err != nil {
		t.Fatal(err)
	}
	if err := ub.Flush(); err != nil {
		t.Fatal(err)
	}
	_, err = ua.Request("b.svc", nil, 2*time.Second)
	if !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("A reached B's service: %v", err)
	}
}

func TestAccountStreamImportWithPrefix(t *testing.T) {
	s, _ := sysRunConfigServer(t, sysAccountsConf)
	ua := sysConnectUser(t, s, "ua", "pa")
	ub := sysConnectUser(t, s, "ub", "pb")

	prefixed, err := ub.SubscribeSync("from_a.events.>")
	if err != nil {
		t.Fatal(err)
	}
	plain, err := ub.SubscribeSync("events.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := ub.Flush(); err != nil {
		t.Fatal(err)
	}

	for _, subj := range []string{"events.login", "events.user.logout"} {
		if err := ua.Publish(subj, []byte(subj)); err != nil {
			t.Fatal(err)
		}
		m, err := prefixed.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("%s not imported: %v", subj, err)
		}
		if m.Subject != "from_a."+subj || string(m.Data) != subj {
			t.Errorf("imported %q as %q (%q)", subj, m.Subject, m.Data)
		}
	}
	sysExpectNothing(t, ub, plain)

	// Only exported subjects flow.
	all, err := ub.SubscribeSync(">")
	if err != nil {
		t.Fatal(err)
	}
	if err := ub.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := ua.Publish("other.thing", []byte("x")); err != nil {
		t.Fatal(err)
	}
	// A message on an exported subject after it proves the import path ran.
	if err := ua.Publish("events.marker", []byte("m")); err != nil {
		t.Fatal(err)
	}
	m, err := all.NextMsg(5 * time.Second)
	if err != nil || m.Subject != "from_a.events.marker" {
		t.Fatalf("first message B saw: %v %v", m, err)
	}
}

func sysWriteReloadConf(t *testing.T, path, pass string) {
	t.Helper()
	body := "listen: \"127.0.0.1:-1\"\nserver_name: reload-test\nauthorization {\n  users = [{user: a, password: " + pass + "}]\n}\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestReloadUsers(t *testing.T) {
	f := optsWriteConf(t, t.TempDir(), "reload.conf", "")
	sysWriteReloadConf(t, f, "b")
	o, err := ProcessConfigFile(f)
	if err != nil {
		t.Fatal(err)
	}
	o.NoLog, o.NoSigs = true, true
	s := runServer(t, o)

	try := func(pass string) error {
		nc, err := nats.Connect(s.ClientURL(), nats.UserInfo("a", pass), nats.Timeout(2*time.Second), nats.MaxReconnects(0))
		if err == nil {
			nc.Close()
		}
		return err
	}
	if err := try("b"); err != nil {
		t.Fatalf("a/b before reload: %v", err)
	}
	if err := try("c"); err == nil {
		t.Fatalf("a/c accepted before reload")
	}

	before := s.varz().ConfigLoadTime
	sysWriteReloadConf(t, f, "c")
	if err := s.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if err := try("b"); err == nil {
		t.Fatalf("a/b accepted after reload")
	} else if !errors.Is(err, nats.ErrAuthorization) && !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Fatalf("a/b after reload: %v, want an authorization error", err)
	}
	if err := try("c"); err != nil {
		t.Fatalf("a/c after reload: %v", err)
	}
	if after := s.varz().ConfigLoadTime; !after.After(before) {
		t.Errorf("config_load_time not updated: %v -> %v", before, after)
	}
	if !s.getOpts().NoLog {
		t.Errorf("reload turned logging back on for a server started with NoLog")
	}
}

func TestReloadErrors(t *testing.T) {
	// No config file.
	s := runServer(t, nil)
	if err := s.Reload(); err == nil {
		t.Fatalf("Reload without a config file succeeded")
	}

	// A change that needs a restart is refused and the old config stays.
	f := optsWriteConf(t, t.TempDir(), "r.conf", "")
	sysWriteReloadConf(t, f, "b")
	o, err := ProcessConfigFile(f)
	if err != nil {
		t.Fatal(err)
	}
	o.NoLog, o.NoSigs = true, true
	s = runServer(t, o)
	body := "listen: \"127.0.0.1:-1\"\nserver_name: other-name\nauthorization {\n  users = [{user: a, password: c}]\n}\n"
	if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err == nil || !strings.Contains(err.Error(), "server_name") {
		t.Fatalf("server_name change: %v", err)
	}
	// A broken file is refused too.
	if err := os.WriteFile(f, []byte("debug: 5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err == nil || !strings.Contains(err.Error(), f+":1:1") {
		t.Fatalf("broken config: %v", err)
	}
	nc, err := nats.Connect(s.ClientURL(), nats.UserInfo("a", "b"), nats.Timeout(2*time.Second), nats.MaxReconnects(0))
	if err != nil {
		t.Fatalf("old credentials after refused reloads: %v", err)
	}
	nc.Close()
}

func TestReloadDisconnectsRevokedUsers(t *testing.T) {
	f := optsWriteConf(t, t.TempDir(), "rv.conf", "")
	sysWriteReloadConf(t, f, "b")
	o, err := ProcessConfigFile(f)
	if err != nil {
		t.Fatal(err)
	}
	o.NoLog, o.NoSigs = true, true
	s := runServer(t, o)
	closed := make(chan struct{})
	monConnect(t, s.ClientURL(), nats.UserInfo("a", "b"), nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
	sysWriteReloadConf(t, f, "c")
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-closed:
	case <-time.After(2 * time.Second):
		t.Fatalf("client with revoked credentials still connected after reload")
	}
}

func TestReloadAccountUsers(t *testing.T) {
	conf := func(extra string) string {
		return `listen: "127.0.0.1:-1"
accounts {
  A { users: [{user: ua, password: ` + extra + `}] }
}
`
	}
	s, f := sysRunConfigServer(t, conf("pa"))
	accountOf := func(user, pass string) string {
		t.Helper()
		nc := sysConnectUser(t, s, user, pass)
		defer nc.Close()
		cid, _ := nc.GetClientID()
		cz := s.connz(&ConnzOptions{CID: cid})
		if len(cz.Conns) != 1 {
			t.Fatalf("connection %d not found", cid)
		}
		return cz.Conns[0].Account
	}
	if acc := accountOf("ua", "pa"); acc != "A" {
		t.Fatalf("ua bound to %q", acc)
	}

	// A changed password in an account applies, and the user stays in A.
	if err := os.WriteFile(f, []byte(conf("pa2")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if acc := accountOf("ua", "pa2"); acc != "A" {
		t.Fatalf("after reload ua bound to %q", acc)
	}

	// An account added by a reload must not have its users silently
	// bound to the global account: either the reload is refused or the
	// user lands in the new account.
	body := `listen: "127.0.0.1:-1"
accounts {
  A { users: [{user: ua, password: pa2}] }
  C { users: [{user: uc, password: pc}] }
}
`
	if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		// Refused: the old configuration stays in force.
		if _, cerr := nats.Connect(s.ClientURL(), nats.UserInfo("uc", "pc"), nats.Timeout(2*time.Second), nats.MaxReconnects(0)); cerr == nil {
			t.Fatalf("reload refused (%v) but uc can connect", err)
		}
		if acc := accountOf("ua", "pa2"); acc != "A" {
			t.Fatalf("after refused reload ua bound to %q", acc)
		}
		return
	}
	if acc := accountOf("uc", "pc"); acc != "C" {
		t.Fatalf("user of an account added by reload bound to %q", acc)
	}
}

// $SYS.REQ.SERVER.PING reaches every server of a cluster (what `nats server
// list` relies on). The system account's handlers are subscribed before the
// cluster starts; their interest must still reach the peers.
func TestSysPingAnsweredByEveryClusterServer(t *testing.T) {
	servers := runCluster(t, 3, func(_ int, o *Options) {
		sys := NewAccount("SYS")
		o.Accounts = []*Account{sys}
		o.SystemAccount = "SYS"
		o.Users = []*User{{Username: "sys", Password: "sys", Account: sys}}
	})
	nc := connectNATS(t, servers[0].ClientURL(), nats.UserInfo("sys", "sys"))
	inbox := nats.NewInbox()
	answers, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	waitForInterestIn(t, servers, "SYS", inbox)
	if err := nc.PublishRequest("$SYS.REQ.SERVER.PING", inbox, nil); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for len(names) < len(servers) {
		m, err := answers.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("answers from %v only: %v", names, err)
		}
		var resp struct {
			Server struct {
				Name string `json:"name"`
			} `json:"server"`
		}
		if err := json.Unmarshal(m.Data, &resp); err != nil {
			t.Fatal(err)
		}
		names[resp.Server.Name] = true
	}
}

// waitForInterestIn waits until every server routes subject of account acc.
func waitForInterestIn(t *testing.T, servers []*Server, acc, subject string) {
	t.Helper()
	waitFor(t, 5*time.Second, "interest on "+subject, func() bool {
		for _, s := range servers {
			a := s.accs.lookup(acc)
			if a == nil || len(a.sl.Match(subject).Plain) == 0 {
				return false
			}
		}
		return true
	})
}
