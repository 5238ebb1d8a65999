package server

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// optsWriteConf writes a config file named name into dir and returns its path.
func optsWriteConf(t testing.TB, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatalf("write %s: %v", p, err)
	}
	return p
}

func optsFindUser(o *Options, name string) *User {
	for _, u := range o.Users {
		if u.Username == name {
			return u
		}
	}
	return nil
}

func optsFindAccount(o *Options, name string) *Account {
	for _, a := range o.Accounts {
		if a.Name == name {
			return a
		}
	}
	return nil
}

func TestOptsProcessConfigFileRealistic(t *testing.T) {
	dir := t.TempDir()
	storeDir := filepath.Join(dir, "js")
	t.Setenv("TERN_OPTS_TEST_SERVER_NAME", "tern-env-name")
	// Env values are re-parsed as config values, so this becomes an int.
	t.Setenv("TERN_OPTS_TEST_MAX_CONN", "777")

	optsWriteConf(t, dir, "accounts.conf", `
accounts {
  A {
    users: [{user: ua, password: pa}]
    exports: [{service: "svc.>"}]
  }
  B {
    users: [{user: ub, password: pb}]
    imports: [{service: {account: A, subject: "svc.>"}}]
  }
  SYS {
    users: [{user: sys, password: $SYS_PASS}]
  }
}
`)
	main := optsWriteConf(t, dir, "main.conf", `
# A realistic nats-server configuration.
SYS_PASS = "s3cr3t"
A_PASS: b

listen: "127.0.0.1:4333"
server_name: $TERN_OPTS_TEST_SERVER_NAME
http_port: 8333
max_payload: 2MB
max_pending: 32MB
max_connections: $TERN_OPTS_TEST_MAX_CONN
ping_interval: "30s"
ping_max: 3
write_deadline: "5s"

authorization {
  users = [
    {
      user: a
      password: $A_PASS
      permissions: {
        publish: {allow: ["x.>"], deny: ["x.secret"]}
        subscribe: ["y.*"]
        allow_responses: true
      }
    }
  ]
  timeout: 3
}

include "accounts.conf"

system_account: SYS
no_auth_user: a

jetstream {
  store_dir: "`+storeDir+`"
  max_mem: 1G
  max_file: 10G
  sync_interval: always
}

cluster {
  name: tern-cluster
  listen: "127.0.0.1:6333"
  routes: [
    nats://127.0.0.1:6334
    nats://127.0.0.1:6335
  ]
}
`)

	o, err := ProcessConfigFile(main)
	if err != nil {
		t.Fatalf("ProcessConfigFile: %v", err)
	}
	if w := o.ConfigWarnings(); len(w) != 0 {
		t.Fatalf("unexpected warnings: %q", w)
	}
	if o.ConfigFile != main {
		t.Errorf("ConfigFile = %q, want %q", o.ConfigFile, main)
	}
	if o.Host != "127.0.0.1" || o.Port != 4333 {
		t.Errorf("listen = %s:%d, want 127.0.0.1:4333", o.Host, o.Port)
	}
	if o.ServerName != "tern-env-name" {
		t.Errorf("ServerName = %q, want value of the env variable", o.ServerName)
	}
	if o.HTTPPort != 8333 {
		t.Errorf("HTTPPort = %d", o.HTTPPort)
	}
	if o.MaxPayload != 2*1024*1024 {
		t.Errorf("MaxPayload = %d, want 2MB", o.MaxPayload)
	}
	if o.MaxPending != 32*1024*1024 {
		t.Errorf("MaxPending = %d, want 32MB", o.MaxPending)
	}
	if o.MaxConn != 777 {
		t.Errorf("MaxConn = %d, want 777 (from env)", o.MaxConn)
	}
	if o.PingInterval != 30*time.Second {
		t.Errorf("PingInterval = %v", o.PingInterval)
	}
	if o.MaxPingsOut != 3 {
		t.Errorf("MaxPingsOut = %d", o.MaxPingsOut)
	}
	if o.WriteDeadline != 5*time.Second {
		t.Errorf("WriteDeadline = %v", o.WriteDeadline)
	}
	if o.AuthTimeout != 3 {
		t.Errorf("AuthTimeout = %v, want 3", o.AuthTimeout)
	}

	// authorization users
	a := optsFindUser(o, "a")
	if a == nil {
		t.Fatalf("user a missing: %+v", o.Users)
	}
	if a.Password != "b" {
		t.Errorf("a.Password = %q, want the $A_PASS value", a.Password)
	}
	if a.Account != nil {
		t.Errorf("user a should be in the global account, got %q", a.Account.Name)
	}
	p := a.Permissions
	if p == nil || p.Publish == nil || p.Subscribe == nil {
		t.Fatalf("permissions of a incomplete: %+v", p)
	}
	if !reflect.DeepEqual(p.Publish.Allow, []string{"x.>"}) || !reflect.DeepEqual(p.Publish.Deny, []string{"x.secret"}) {
		t.Errorf("publish perms = %+v", p.Publish)
	}
	if !reflect.DeepEqual(p.Subscribe.Allow, []string{"y.*"}) || len(p.Subscribe.Deny) != 0 {
		t.Errorf("subscribe perms = %+v", p.Subscribe)
	}
	if p.Response == nil || p.Response.MaxMsgs != 1 || p.Response.Expires != 0 {
		t.Errorf("allow_responses = %+v, want MaxMsgs 1", p.Response)
	}

	// accounts (from the included file)
	var names []string
	for _, acc := range o.Accounts {
		names = append(names, acc.Name)
	}
	sort.Strings(names)
	if !reflect.DeepEqual(names, []string{"A", "B", "SYS"}) {
		t.Fatalf("accounts = %v", names)
	}
	for user, want := range map[string]struct{ pass, acc string }{
		"ua": {"pa", "A"}, "ub": {"pb", "B"}, "sys": {"s3cr3t", "SYS"},
	} {
		u := optsFindUser(o, user)
		if u == nil {
			t.Errorf("user %q missing", user)
			continue
		}
		if u.Password != want.pass || u.Account == nil || u.Account.Name != want.acc {
			t.Errorf("user %q: password %q account %v, want %q in %q", user, u.Password, u.Account, want.pass, want.acc)
		}
		if u.Account != optsFindAccount(o, want.acc) {
			t.Errorf("user %q does not point at the configured account object", user)
		}
	}
	accA, accB := optsFindAccount(o, "A"), optsFindAccount(o, "B")
	if e := accA.exports["svc.>"]; e == nil || !e.service || len(e.accounts) != 0 {
		t.Errorf("A exports = %+v, want public service svc.>", accA.exports)
	}
	if len(accB.exports) != 0 {
		t.Errorf("B exports = %+v", accB.exports)
	}
	wantImp := []importSpec{{service: true, account: "A", subject: "svc.>"}}
	if !reflect.DeepEqual(accB.cfgImports, wantImp) {
		t.Errorf("B imports = %+v, want %+v", accB.cfgImports, wantImp)
	}
	if o.SystemAccount != "SYS" {
		t.Errorf("SystemAccount = %q", o.SystemAccount)
	}
	if o.NoAuthUser != "a" {
		t.Errorf("NoAuthUser = %q", o.NoAuthUser)
	}

	// jetstream: bare G is a power of 1000, as in nats-server
	if !o.JetStream {
		t.Errorf("JetStream not enabled")
	}
	if o.StoreDir != storeDir {
		t.Errorf("StoreDir = %q", o.StoreDir)
	}
	if o.JetStreamMaxMemory != 1000*1000*1000 {
		t.Errorf("JetStreamMaxMemory = %d", o.JetStreamMaxMemory)
	}
	if o.JetStreamMaxStore != 10*1000*1000*1000 {
		t.Errorf("JetStreamMaxStore = %d", o.JetStreamMaxStore)
	}
	if !o.SyncAlways {
		t.Errorf("SyncAlways not set by sync_interval: always")
	}

	// cluster
	if o.Cluster.Name != "tern-cluster" || o.Cluster.Host != "127.0.0.1" || o.Cluster.Port != 6333 {
		t.Errorf("cluster = %+v", o.Cluster)
	}
	var routes []string
	for _, u := range o.Routes {
		routes = append(routes, u.String())
	}
	if !reflect.DeepEqual(routes, []string{"nats://127.0.0.1:6334", "nats://127.0.0.1:6335"}) {
		t.Errorf("routes = %v", routes)
	}

	// The whole thing must also be accepted by NewServer (not started).
	if _, err := NewServer(o); err != nil {
		t.Fatalf("NewServer on the realistic config: %v", err)
	}
}

func TestOptsConfigFileSizesAndSyntax(t *testing.T) {
	dir := t.TempDir()
	// '=' and whitespace separators, semicolons, // comments, KiB suffix,
	// duration given as integer seconds, jetstream: enabled.
	f := optsWriteConf(t, dir, "s.conf", `
port = 4444;
max_payload 512KiB
max_pending: 1mb // binary
ping_interval: 45
write_deadline: "250ms"
jetstream: enabled
debug: yes
trace: off
`)
	o, err := ProcessConfigFile(f)
	if err != nil {
		t.Fatalf("ProcessConfigFile: %v", err)
	}
	if o.Port != 4444 || o.MaxPayload != 512*1024 || o.MaxPending != 1024*1024 {
		t.Errorf("port/max_payload/max_pending = %d/%d/%d", o.Port, o.MaxPayload, o.MaxPending)
	}
	if o.PingInterval != 45*time.Second || o.WriteDeadline != 250*time.Millisecond {
		t.Errorf("ping_interval/write_deadline = %v/%v", o.PingInterval, o.WriteDeadline)
	}
	if !o.JetStream || !o.Debug || o.Trace {
		t.Errorf("jetstream/debug/trace = %v/%v/%v", o.JetStream, o.Debug, o.Trace)
	}
	if !o.Logtime {
		t.Errorf("Logtime should default to true")
	}
}

// Unknown keys are errors naming each key and its position, as in
// nats-server; a variable definition is not a key.
func TestOptsUnknownKeysAreErrors(t *testing.T) {
	dir := t.TempDir()
	f := optsWriteConf(t, dir, "u.conf", `port: 4222
bogus_option: 1
cluster {
  name: c
  what_is_this: true
}
jetstream {
  max_mem: 1G
  colour: blue
}
USED = "tern"
server_name: $USED
`)
	_, err := ProcessConfigFile(f)
	if err == nil {
		t.Fatal("unknown keys accepted")
	}
	all := err.Error()
	for _, want := range []string{
		f + ":2:1: unknown field \"bogus_option\"",
		f + ":5:3: unknown field \"what_is_this\" in cluster",
		f + ":9:3: unknown field \"colour\" in jetstream",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("error %q lacks %q", all, want)
		}
	}
	if i2, i5, i9 := strings.Index(all, ":2:1:"), strings.Index(all, ":5:3:"), strings.Index(all, ":9:3:"); !(i2 < i5 && i5 < i9) {
		t.Errorf("errors not in file order: %q", all)
	}
	if strings.Contains(all, "USED") || strings.Count(all, "\n") != 2 {
		t.Errorf("want exactly three errors, no variable: %q", all)
	}
}

func TestOptsWrongTypesAreErrorsWithPosition(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, body, want string
	}{
		{"bool", "port: 4222\ndebug: \"very\"\n", ":2:1: expected a boolean"},
		{"int", "ping_max: three\n", ":1:1: expected a number"},
		{"duration", "\n\n  ping_interval: \"often\"\n", ":3:3: error parsing duration"},
		{"listen", "listen: [1, 2]\n", ":1:1: expected listen address"},
		{"nested", "authorization {\n  users = [\n    {user: a, password: b, permissions: {publish: {allow: 5}}}\n  ]\n}\n", ":3:"},
		{"map", "cluster: 5\n", ":1:1: expected a map"},
		{"auth timeout", "authorization {\n  timeout: [1]\n}\n", ":2:3: expected a timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := optsWriteConf(t, dir, strings.ReplaceAll(tc.name, " ", "_")+".conf", tc.body)
			_, err := ProcessConfigFile(f)
			if err == nil {
				t.Fatalf("expected an error")
			}
			if !strings.Contains(err.Error(), f+tc.want) {
				t.Fatalf("error %q does not contain %q", err, f+tc.want)
			}
		})
	}

	// Syntax errors come from the parser, also with a position.
	f := optsWriteConf(t, dir, "syntax.conf", "port: 4222\nauthorization {\n  user: a\n")
	if _, err := ProcessConfigFile(f); err == nil || !strings.Contains(err.Error(), f+":") {
		t.Fatalf("syntax error without position: %v", err)
	}
	// An undefined variable is an error too.
	f = optsWriteConf(t, dir, "undef.conf", "port: $TERN_SURELY_UNDEFINED_VARIABLE_X\n")
	if _, err := ProcessConfigFile(f); err == nil || !strings.Contains(err.Error(), "TERN_SURELY_UNDEFINED_VARIABLE_X") {
		t.Fatalf("undefined variable: %v", err)
	}
	// A missing file is an error.
	if _, err := ProcessConfigFile(filepath.Join(dir, "nope.conf")); err == nil {
		t.Fatalf("missing file accepted")
	}
}

func optsParseFlags(t *testing.T, args ...string) *Options {
	t.Helper()
	fs := flag.NewFlagSet("nats-server", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o, err := ConfigureOptions(fs, args, nil, nil, nil)
	if err != nil {
		t.Fatalf("ConfigureOptions(%q): %v", args, err)
	}
	if o == nil {
		t.Fatalf("ConfigureOptions(%q) returned nil options", args)
	}
	return o
}

func TestOptsFlagsOnly(t *testing.T) {
	sd := t.TempDir()
	o := optsParseFlags(t,
		"-a", "127.0.0.2", "-p", "5555", "-n", "flag-name", "-m", "8444",
		"-js", "-sd", sd, "--user", "fu", "--pass", "fp", "--auth", "tok",
		"-DV", "--cluster", "nats://127.0.0.1:6333",
		"--routes", "nats://127.0.0.1:7001,nats://127.0.0.1:7002")
	if o.Host != "127.0.0.2" || o.Port != 5555 || o.ServerName != "flag-name" || o.HTTPPort != 8444 {
		t.Errorf("server flags: host %q port %d name %q http %d", o.Host, o.Port, o.ServerName, o.HTTPPort)
	}
	if !o.JetStream || o.StoreDir != sd {
		t.Errorf("jetstream flags: %v %q", o.JetStream, o.StoreDir)
	}
	if o.Username != "fu" || o.Password != "fp" || o.Authorization != "tok" {
		t.Errorf("auth flags: %q %q %q", o.Username, o.Password, o.Authorization)
	}
	if !o.Debug || !o.Trace || o.TraceVerbose {
		t.Errorf("-DV: debug %v trace %v verbose %v", o.Debug, o.Trace, o.TraceVerbose)
	}
	if o.Cluster.Host != "127.0.0.1" || o.Cluster.Port != 6333 || o.Cluster.ListenStr != "nats://127.0.0.1:6333" {
		t.Errorf("--cluster: %+v", o.Cluster)
	}
	if len(o.Routes) != 2 || o.Routes[0].Host != "127.0.0.1:7001" || o.Routes[1].Host != "127.0.0.1:7002" {
		t.Errorf("--routes: %v", o.Routes)
	}
	if !o.Logtime {
		t.Errorf("Logtime should default to true")
	}

	// Long aliases and -DVV.
	o = optsParseFlags(t, "--addr", "127.0.0.3", "--port", "6666", "--server_name", "n2", "--http_port", "8555", "--jetstream", "--store_dir", sd, "-DVV")
	if o.Host != "127.0.0.3" || o.Port != 6666 || o.ServerName != "n2" || o.HTTPPort != 8555 || !o.JetStream || o.StoreDir != sd {
		t.Errorf("long aliases: %+v", o)
	}
	if !o.Debug || !o.Trace || !o.TraceVerbose {
		t.Errorf("-DVV: debug %v trace %v verbose %v", o.Debug, o.Trace, o.TraceVerbose)
	}

	// Unknown flags are errors.
	fs := flag.NewFlagSet("nats-server", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := ConfigureOptions(fs, []string{"--no-such-flag"}, nil, nil, nil); err == nil {
		t.Errorf("unknown flag accepted")
	}
	// A bad --cluster URL is an error.
	fs = flag.NewFlagSet("nats-server", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := ConfigureOptions(fs, []string{"--cluster", "nats://nohostport"}, nil, nil, nil); err == nil {
		t.Errorf("bad --cluster accepted")
	}
}

func TestOptsFlagsOverrideConfigFile(t *testing.T) {
	dir := t.TempDir()
	f := optsWriteConf(t, dir, "f.conf", `
listen: "127.0.0.1:4333"
server_name: file-name
http_port: 8333
debug: false
trace: true
max_payload: 2MB
authorization {
  user: file-user
  password: file-pass
}
jetstream {
  store_dir: "/file/store"
}
cluster {
  name: file-cluster
  listen: "127.0.0.1:6222"
  routes: [nats://127.0.0.1:9991]
}
`)
	o := optsParseFlags(t, "-c", f, "-p", "5555", "-D", "--user", "flag-user",
		"-sd", "/flag/store", "--routes", "nats://127.0.0.1:7001,nats://127.0.0.1:7002")

	// Overridden by flags.
	if o.Port != 5555 {
		t.Errorf("Port = %d, want the -p value 5555", o.Port)
	}
	if !o.Debug {
		t.Errorf("Debug = false, want -D to win over the file's false")
	}
	if o.Username != "flag-user" {
		t.Errorf("Username = %q", o.Username)
	}
	if o.StoreDir != "/flag/store" {
		t.Errorf("StoreDir = %q", o.StoreDir)
	}
	if len(o.Routes) != 2 || o.Routes[0].String() != "nats://127.0.0.1:7001" {
		t.Errorf("Routes = %v, want the --routes value", o.Routes)
	}
	// Kept from the file.
	if o.Host != "127.0.0.1" {
		t.Errorf("Host = %q, want the file's host", o.Host)
	}
	if o.ServerName != "file-name" || o.HTTPPort != 8333 || !o.Trace || o.MaxPayload != 2*1024*1024 {
		t.Errorf("file values lost: name %q http %d trace %v max_payload %d", o.ServerName, o.HTTPPort, o.Trace, o.MaxPayload)
	}
	if o.Password != "file-pass" {
		t.Errorf("Password = %q, want the file's", o.Password)
	}
	if !o.JetStream {
		t.Errorf("JetStream from the file lost")
	}
	if o.Cluster.Name != "file-cluster" || o.Cluster.Host != "127.0.0.1" || o.Cluster.Port != 6222 {
		t.Errorf("Cluster = %+v, want the file's", o.Cluster)
	}
	if o.ConfigFile != f {
		t.Errorf("ConfigFile = %q", o.ConfigFile)
	}

	// --cluster overrides the file's cluster listen but keeps its name.
	o = optsParseFlags(t, "--config", f, "--cluster", "nats://127.0.0.1:6333", "-n", "flag-name")
	if o.Cluster.Host != "127.0.0.1" || o.Cluster.Port != 6333 || o.Cluster.Name != "file-cluster" {
		t.Errorf("Cluster = %+v", o.Cluster)
	}
	if o.ServerName != "flag-name" || o.Port != 4333 || o.Debug {
		t.Errorf("name %q port %d debug %v", o.ServerName, o.Port, o.Debug)
	}
	if len(o.Routes) != 1 || o.Routes[0].String() != "nats://127.0.0.1:9991" {
		t.Errorf("Routes = %v, want the file's", o.Routes)
	}

	// An invalid file is reported by ConfigureOptions.
	bad := optsWriteConf(t, dir, "bad.conf", "debug: 5\n")
	fs := flag.NewFlagSet("nats-server", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := ConfigureOptions(fs, []string{"-c", bad}, nil, nil, nil); err == nil || !strings.Contains(err.Error(), bad+":1:1") {
		t.Errorf("bad config file: %v", err)
	}
}

func TestOptsNewServerErrors(t *testing.T) {
	dir := t.TempDir()

	f := optsWriteConf(t, dir, "noauth.conf", `
authorization {
  users = [{user: a, password: b}]
}
no_auth_user: ghost
`)
	o, err := ProcessConfigFile(f)
	if err != nil {
		t.Fatalf("ProcessConfigFile: %v", err)
	}
	if _, err := NewServer(o); err == nil || !strings.Contains(err.Error(), "ghost") {
		t.Fatalf("no_auth_user naming a missing user: %v", err)
	}

	// no_auth_user naming a user of an account is fine.
	f = optsWriteConf(t, dir, "noauth_ok.conf", `
accounts { A { users = [{user: ua, password: pa}] } }
no_auth_user: ua
`)
	if o, err = ProcessConfigFile(f); err != nil {
		t.Fatalf("ProcessConfigFile: %v", err)
	}
	if _, err := NewServer(o); err != nil {
		t.Fatalf("no_auth_user naming an account user: %v", err)
	}

	f = optsWriteConf(t, dir, "payload.conf", "max_payload: 2MB\nmax_pending: 1MB\n")
	if o, err = ProcessConfigFile(f); err != nil {
		t.Fatalf("ProcessConfigFile: %v", err)
	}
	if _, err := NewServer(o); err == nil || !strings.Contains(err.Error(), "max_payload") {
		t.Fatalf("max_payload > max_pending: %v", err)
	}

	// max_payload above the default max_pending (64MB) also fails.
	o = testOptions()
	o.MaxPayload = 65 * 1024 * 1024
	if _, err := NewServer(o); err == nil {
		t.Fatalf("max_payload of 65MB accepted")
	}

	// An import from an account that does not exist.
	f = optsWriteConf(t, dir, "imp.conf", `
accounts {
  B { imports: [{stream: {account: NOPE, subject: "x.>"}}] }
}
`)
	if o, err = ProcessConfigFile(f); err != nil {
		t.Fatalf("ProcessConfigFile: %v", err)
	}
	if _, err := NewServer(o); err == nil || !strings.Contains(err.Error(), "NOPE") {
		t.Fatalf("import from unknown account: %v", err)
	}
	// An import with no matching export.
	f = optsWriteConf(t, dir, "imp2.conf", `
accounts {
  A { }
  B { imports: [{service: {account: A, subject: "svc.x"}}] }
}
`)
	if o, err = ProcessConfigFile(f); err != nil {
		t.Fatalf("ProcessConfigFile: %v", err)
	}
	if _, err := NewServer(o); err == nil {
		t.Fatalf("import without export accepted")
	}
}

func TestOptsInt32LimitsOverflow(t *testing.T) {
	dir := t.TempDir()
	// 4GB and 3GB do not fit max_payload's int32: they must be rejected,
	// not wrapped to 0 (silently the default) or a negative limit.
	for i, body := range []string{"max_payload: 4GB\n", "max_payload: 3GB\n", "max_control_line: 4GB\n"} {
		f := optsWriteConf(t, dir, "big"+itoa(i)+".conf", body)
		o, err := ProcessConfigFile(f)
		if err == nil {
			t.Errorf("%q accepted: max_payload %d max_control_line %d", body, o.MaxPayload, o.MaxControlLine)
			continue
		}
		if !strings.Contains(err.Error(), f+":1:1") {
			t.Errorf("%q: error without position: %v", body, err)
		}
	}
}

func TestOptsJetStreamQuotedStorageSizes(t *testing.T) {
	// nats-server also accepts sizes as strings with a K/M/G/T suffix,
	// which are powers of 1024 (getStorageSize).
	f := optsWriteConf(t, t.TempDir(), "js.conf", `
jetstream {
  max_mem: "512M"
  max_file: "2G"
}
`)
	o, err := ProcessConfigFile(f)
	if err != nil {
		t.Fatalf("ProcessConfigFile: %v", err)
	}
	if o.JetStreamMaxMemory != 512<<20 || o.JetStreamMaxStore != 2<<30 {
		t.Fatalf("max_mem %d max_file %d", o.JetStreamMaxMemory, o.JetStreamMaxStore)
	}
	f = optsWriteConf(t, t.TempDir(), "js2.conf", "jetstream {\n  max_file: \"2X\"\n}\n")
	if _, err := ProcessConfigFile(f); err == nil || !strings.Contains(err.Error(), f+":2:3") {
		t.Fatalf("bad size string: %v", err)
	}
}
