package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

// configKeyCase is one key of nats-server v2.15.2's configuration, with a
// value of the right type, and what Tern does with it.
type configKeyCase struct {
	scope, key, value string
	class             keyClass
}

type keyClass int

const (
	implemented keyClass = iota // parsed, no warning
	ignored                     // accepted with a warning (pure tuning)
	refused                     // a "not supported by Tern yet" error
)

// scopeTemplates place a key inside the block its scope names.
var scopeTemplates = map[string]string{
	"":                      "%s: %s\n",
	"cluster":               "cluster {\n  %s: %s\n}\n",
	"jetstream":             "jetstream {\n  %s: %s\n}\n",
	"jetstream limits":      "jetstream {\n  limits {\n    %s: %s\n  }\n}\n",
	"authorization":         "authorization {\n  %s: %s\n}\n",
	"cluster authorization": "cluster {\n  authorization {\n    %s: %s\n  }\n}\n",
	"user":                  "authorization {\n  users: [\n    {user: u, password: p, %s: %s}\n  ]\n}\n",
	"permissions":           "authorization {\n  users: [\n    {user: u, password: p, permissions: {%s: %s}}\n  ]\n}\n",
	"account":               "accounts {\n  A {\n    %s: %s\n  }\n}\n",
	"account jetstream":     "accounts {\n  A {\n    jetstream {\n      %s: %s\n    }\n  }\n}\n",
	"export":                "accounts {\n  A {\n    exports: [\n      {service: \"a.>\", %s: %s}\n    ]\n  }\n}\n",
	"import":                "accounts {\n  A {}\n  B {\n    imports: [\n      {service: {account: A, subject: \"a.>\"}, %s: %s}\n    ]\n  }\n}\n",
}

func keys(scope string, class keyClass, kv ...string) []configKeyCase {
	var out []configKeyCase
	for i := 0; i < len(kv); i += 2 {
		out = append(out, configKeyCase{scope, kv[i], kv[i+1], class})
	}
	return out
}

// nats-server v2.15.2's config keys (opts.go), scope by scope.
func configKeyCases() [][]configKeyCase {
	return [][]configKeyCase{
		keys("", implemented, "listen", `"127.0.0.1:4222"`, "client_advertise", `"x:4222"`,
			"port", "4222", "server_name", "s", "host", "127.0.0.1", "net", "127.0.0.1",
			"debug", "true", "trace", "true", "trace_verbose", "true", "logtime", "true",
			"logtime_utc", "true", "accounts", "{A {}}", "authorization", "{token: t}",
			"http", "8222", "http_port", "8222", "monitor_port", "8222", "https_port", "8443",
			"http_base_path", `"/x"`, "cluster", "{port: 6222}", "store_dir", `"/tmp/x"`,
			"storedir", `"/tmp/x"`, "jetstream", "true", "logfile", `"/tmp/l"`, "log_file", `"/tmp/l"`,
			"logfile_size_limit", "100", "log_size_limit", "100", "logfile_max_num", "2",
			"log_max_num", "2", "syslog", "false", "remote_syslog", `"udp://x:514"`,
			"pidfile", `"/tmp/p"`, "pid_file", `"/tmp/p"`, "ports_file_dir", `"/tmp"`,
			"prof_port", "6060", "prof_block_rate", "1", "max_control_line", "4096", "max_payload", "1024",
			"max_pending", "10000000", "max_connections", "10", "max_conn", "10",
			"max_subscriptions", "10", "max_subs", "10", "ping_interval", `"2m"`, "ping_max", "2",
			"write_deadline", `"2s"`, "lame_duck_duration", `"30s"`, "lame_duck_grace_period", `"10s"`,
			"no_auth_user", "u", "system_account", "SYS", "system", "SYS",
			"no_system_account", "true", "no_system", "true", "no_sys_acc", "true",
			"no_header_support", "false", "server_tags", `["a"]`, "max_closed_clients", "10",
			"tls", "{timeout: 2}", "https", "8443", "allow_non_tls", "true"),
		keys("", ignored, "trace_headers", "true", "disable_sublist_cache", "true",
			"no_sublist_cache", "true", "max_traced_msg_len", "10",
			"connect_error_reports", "1", "reconnect_error_reports", "1",
			"no_fast_producer_stall", "true", "server_metadata", "{a: b}"),
		keys("", refused, "mappings", "{a: b}", "maps", "{a: b}", "default_sentinel", "x",
			"gateway", "{port: 7222}", "leaf", "{port: 7422}", "leafnodes", "{port: 7422}",
			"proxy_protocol", "true", "ocsp", "true", "write_timeout", "close", "operator", "x.jwt",
			"operators", "x.jwt", "roots", "x.jwt", "root", "x.jwt", "root_operators", "x.jwt",
			"root_operator", "x.jwt", "resolver", "MEMORY", "account_resolver", "MEMORY",
			"accounts_resolver", "MEMORY", "resolver_tls", "{}", "resolver_preload", "{}",
			"resolver_pinned_accounts", "[]", "trusted", "x", "trusted_keys", "x",
			"websocket", "{port: 8080}", "ws", "{port: 8080}", "mqtt", "{port: 1883}",
			"default_js_domain", "{}", "ocsp_cache", "true", "proxies", "{}",
			"feature_flags", "{}", "max_sub_tokens", "10", "max_subscription_tokens", "10"),
		keys("cluster", implemented, "name", "c", "listen", `"127.0.0.1:6222"`, "port", "6222",
			"host", "127.0.0.1", "net", "127.0.0.1", "routes", `["nats-route://a:6222"]`,
			"cluster_advertise", `"x:6222"`, "advertise", `"x:6222"`, "no_advertise", "true",
			"connect_retries", "3", "pool_size", "3", "authorization", "{user: a, password: b}",
			"tls", "{timeout: 2}"),
		keys("cluster", ignored, "connect_backoff", "true", "compression", "off",
			"accounts", "[A]", "ping_interval", `"2m"`, "ping_max", "2",
			"write_deadline", `"2s"`, "write_timeout", "close"),
		keys("cluster", refused, "permissions", "{import: a}"),
		keys("cluster authorization", implemented, "user", "a", "username", "a",
			"pass", "b, user: a", "password", "b, user: a", "timeout", "1"),
		keys("jetstream", implemented, "enabled", "true", "enable", "true", "disabled", "false",
			"disable", "false", "store", `"/tmp/x"`, "store_dir", `"/tmp/x"`, "storedir", `"/tmp/x"`,
			"sync", `"1s"`, "sync_interval", "always", "max_memory_store", "1G", "max_mem_store", "1G",
			"max_mem", "1G", "max_file_store", "1G", "max_file", "1G", "domain", "d"),
		keys("jetstream", ignored, "strict", "true", "extension_hint", "x",
			"max_outstanding_catchup", "1000", "max_buffered_size", "1000",
			"max_buffered_msgs", "1000", "request_queue_limit", "1000", "info_queue_limit", "1000",
			"meta_compact", "1000", "meta_compact_size", "1000", "meta_compact_sync", "true",
			"max_concurrent_io", "4"),
		keys("jetstream", refused, "key", "k", "ek", "k", "encryption_key", "k", "prev_key", "k",
			"prev_ek", "k", "prev_encryption_key", "k", "cipher", "aes",
			"tpm", "{}", "unique_tag", "az"),
		keys("jetstream", implemented, "limits", "{}"),
		keys("jetstream limits", implemented, "max_ack_pending", "100", "max_request_batch", "10",
			"default_max_consumers", "5"),
		keys("jetstream limits", refused, "max_ha_assets", "10", "duplicate_window", `"1m"`,
			"batch", "{max_msgs: 10}"),
		keys("authorization", implemented, "user", "a", "username", "a", "pass", "b",
			"password", "b", "token", "t", "timeout", "1", "users", "[]",
			"default_permission", "{}", "default_permissions", "{}", "permissions", "{}"),
		keys("authorization", refused, "auth_callout", "{}", "auth_hook", "{}", "proxy_required", "true"),
		keys("user", implemented, "permission", "{}", "permissions", "{}", "authorization", "{}",
			"allowed_connection_types", `["STANDARD"]`, "connection_types", `["STANDARD"]`,
			"clients", `["STANDARD"]`),
		keys("user", refused, "proxy_required", "true"),
		keys("permissions", implemented, "pub", `"a"`, "publish", `"a"`, "import", `"a"`,
			"sub", `"a"`, "subscribe", `"a"`, "export", `"a"`, "allow_responses", "true",
			"publish_allow_responses", "true"),
		keys("account", implemented, "users", "[]", "jetstream", "enabled", "exports", "[]",
			"imports", "[]", "default_permissions", "{}"),
		keys("account", refused, "nkey", "A", "mappings", "{a: b}", "maps", "{a: b}",
			"limits", "{}", "msg_trace", "x", "trace_dest", "x"),
		keys("account jetstream", implemented, "enabled", "true", "enable", "true",
			"disabled", "false", "disable", "false", "max_memory", "1G", "max_mem", "1G",
			"mem", "1G", "memory", "1G", "max_store", "1G", "max_file", "1G", "max_disk", "1G",
			"store", "1G", "disk", "1G", "max_streams", "3", "streams", "3",
			"max_consumers", "3", "consumers", "3", "max_ack_pending", "10"),
		keys("account jetstream", refused,
			"max_bytes_required", "true", "max_stream_bytes", "1G", "max_bytes", "1G",
			"mem_max_stream_bytes", "1G", "memory_max_stream_bytes", "1G",
			"disk_max_stream_bytes", "1G", "store_max_stream_bytes", "1G",
			"cluster_traffic", "system"),
		keys("export", implemented, "accounts", "[B]"),
		keys("export", ignored, "advertise", "true", "description", "d", "info_url", "u"),
		keys("export", refused, "response", "singleton", "response_type", "singleton",
			"response_threshold", `"1s"`, "threshold", `"1s"`, "latency", "lat",
			"account_token_position", "2", "allow_trace", "true"),
		keys("import", implemented, "to", `"b.>"`, "prefix", "p"),
		keys("import", refused, "share", "true", "allow_trace", "true"),
	}
}

// Every key of nats-server's configuration is implemented, refused with an
// error naming it and its position, or ignored with a warning; none is
// dropped silently or unknown to Tern.
func TestConfigEveryKeyClassified(t *testing.T) {
	dir := t.TempDir()
	for _, group := range configKeyCases() {
		for _, c := range group {
			name := strings.TrimSpace(c.scope + " " + c.key)
			t.Run(name, func(t *testing.T) {
				body := fmt.Sprintf(scopeTemplates[c.scope], c.key, c.value)
				path := filepath.Join(dir, "k.conf")
				if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
					t.Fatal(err)
				}
				o := &Options{}
				err := o.ProcessConfigFile(path)
				warns := strings.Join(o.ConfigWarnings(), "\n")
				switch c.class {
				case implemented:
					if err != nil || warns != "" {
						t.Fatalf("%s: error %v, warnings %q", body, err, warns)
					}
				case ignored:
					if err != nil || !strings.Contains(warns, fmt.Sprintf("ignoring %q", c.key)) {
						t.Fatalf("%s: error %v, warnings %q", body, err, warns)
					}
				case refused:
					want := fmt.Sprintf("%q", c.key)
					if err == nil || !strings.Contains(err.Error(), want) ||
						!strings.Contains(err.Error(), "not supported by Tern yet") ||
						!strings.Contains(err.Error(), "k.conf:") {
						t.Fatalf("%s: got %v", body, err)
					}
				}
			})
		}
	}
}

// A key nobody knows is an error with its position, at any depth.
func TestConfigUnknownKeyIsError(t *testing.T) {
	dir := t.TempDir()
	for scope, tmpl := range scopeTemplates {
		path := filepath.Join(dir, "u.conf")
		os.WriteFile(path, []byte(fmt.Sprintf(tmpl, "no_such_key", "1")), 0o600)
		_, err := ProcessConfigFile(path)
		if err == nil || !strings.Contains(err.Error(), `unknown field "no_such_key"`) || !strings.Contains(err.Error(), "u.conf:") {
			t.Errorf("scope %q: %v", scope, err)
		}
	}
}

func TestConfigJetStreamDisabled(t *testing.T) {
	dir := t.TempDir()
	for body, want := range map[string]bool{
		"jetstream { disabled: true }":                   false,
		"jetstream { disable: true, store_dir: \"/x\" }": false,
		"jetstream { enabled: false }":                   false,
		"jetstream { disabled: false }":                  true,
		"jetstream { store_dir: \"/x\" }":                true,
		"jetstream: disabled":                            false,
		"jetstream: enabled":                             true,
	} {
		path := filepath.Join(dir, "js.conf")
		os.WriteFile(path, []byte(body), 0o600)
		o, err := ProcessConfigFile(path)
		if err != nil || o.JetStream != want {
			t.Errorf("%s: JetStream=%v err=%v, want %v", body, o != nil && o.JetStream, err, want)
		}
	}
	// And a server started from it has no JetStream.
	path := filepath.Join(dir, "off.conf")
	os.WriteFile(path, []byte("port: -1\njetstream { disabled: true, store_dir: \""+filepath.Join(dir, "sd")+"\" }\n"), 0o600)
	o, err := ProcessConfigFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := runServer(t, o)
	if s.JetStreamEnabled() {
		t.Fatal("jetstream { disabled: true } started JetStream")
	}
}

// Negative limits are refused, at start and on reload.
func TestConfigNegativeLimitsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, line := range []string{
		"max_payload: -1", "max_control_line: -1", "max_pending: -1", "max_subscriptions: -1",
		"ping_interval: -5", "ping_max: -1", "max_connections: -1", "write_deadline: \"-1s\"",
		"max_closed_clients: -1", "authorization { user: a, password: b, timeout: -1 }",
		"lame_duck_duration: \"10s\"\nlame_duck_grace_period: \"20s\"",
	} {
		path := filepath.Join(dir, "neg.conf")
		os.WriteFile(path, []byte("port: -1\n"+line+"\n"), 0o600)
		o, err := ProcessConfigFile(path)
		if err == nil {
			_, err = NewServer(o)
		}
		if err == nil {
			t.Errorf("%q accepted", line)
		}
	}
}

// A negative max_payload used to switch the limit off: a 2 MB publish got
// through. Now the server does not start with it.
func TestNegativeMaxPayloadOptionRefused(t *testing.T) {
	o := testOptions()
	o.MaxPayload = -1
	if _, err := NewServer(o); err == nil || !strings.Contains(err.Error(), "max_payload can not be negative") {
		t.Fatalf("NewServer: %v", err)
	}
}

func TestAllowedConnectionTypes(t *testing.T) {
	o := testOptions()
	o.Users = []*User{
		{Username: "tcp", Password: "p", AllowedConnectionTypes: map[string]struct{}{"STANDARD": {}}},
		{Username: "ws", Password: "p", AllowedConnectionTypes: map[string]struct{}{"websocket": {}}},
		{Username: "inproc", Password: "p", AllowedConnectionTypes: map[string]struct{}{"IN_PROCESS": {}}},
	}
	s := runServer(t, o)
	if _, err := nats.Connect(s.ClientURL(), nats.UserInfo("tcp", "p")); err != nil {
		t.Fatalf("STANDARD user over TCP: %v", err)
	}
	for _, u := range []string{"ws", "inproc"} {
		if nc, err := nats.Connect(s.ClientURL(), nats.UserInfo(u, "p")); err == nil {
			nc.Close()
			t.Fatalf("user %s connected over TCP", u)
		}
	}
	nc, err := nats.Connect("", nats.InProcessServer(s), nats.UserInfo("inproc", "p"))
	if err != nil {
		t.Fatalf("IN_PROCESS user in process: %v", err)
	}
	nc.Close()
	if nc, err := nats.Connect("", nats.InProcessServer(s), nats.UserInfo("tcp", "p")); err == nil {
		nc.Close()
		t.Fatal("STANDARD-only user connected in process")
	}
	bad := testOptions()
	bad.Users = []*User{{Username: "x", Password: "p", AllowedConnectionTypes: map[string]struct{}{"CARRIER_PIGEON": {}}}}
	if _, err := NewServer(bad); err == nil || !strings.Contains(err.Error(), "unknown connection type") {
		t.Fatalf("unknown connection type: %v", err)
	}
}
