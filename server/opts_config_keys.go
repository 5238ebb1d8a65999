package server

import (
	"strings"

	"github.com/nats-io/nats-server/v2/conf"
)

// A config key Tern does not implement is one of two kinds. Every other
// key that is not implemented is an "unknown field" error, as in
// nats-server; nothing is silently dropped.
//
//   - ignoredConfigKeys are pure tuning: ignoring them changes neither what
//     clients observe nor security, so they are accepted with a warning.
//   - refusedConfigKeys are features Tern lacks (TLS variants, operators,
//     leafnodes, ...): running without them would fail open or behave
//     differently, so they are start-up (and reload) errors.
//
// Keys are "scope.key" in lower case; the top level has an empty scope.
var ignoredConfigKeys = map[string]string{
	".disable_sublist_cache":            "a cache switch; matching is the same",
	".no_sublist_cache":                 "a cache switch; matching is the same",
	".max_traced_msg_len":               "truncation of trace lines",
	".connect_error_reports":            "how often connect errors are logged",
	".reconnect_error_reports":          "how often reconnect errors are logged",
	".no_fast_producer_stall":           "flow control of fast producers",
	".trace_headers":                    "trace output detail",
	".server_metadata":                  "descriptive metadata",
	"cluster.connect_backoff":           "route reconnect pacing",
	"cluster.ping_interval":             "route keep-alive pacing",
	"cluster.ping_max":                  "route keep-alive pacing",
	"cluster.write_deadline":            "route write deadline",
	"cluster.write_timeout":             "route write deadline policy",
	"cluster.compression":               "route compression; Tern routes are uncompressed",
	"cluster.accounts":                  "dedicated route connections per account",
	"jetstream.strict":                  "API request strictness",
	"jetstream.extension_hint":          "an operator hint",
	"jetstream.max_outstanding_catchup": "replica catch-up throughput",
	"jetstream.max_buffered_size":       "ingest buffering",
	"jetstream.max_buffered_msgs":       "ingest buffering",
	"jetstream.request_queue_limit":     "internal API queue depth",
	"jetstream.info_queue_limit":        "internal API queue depth",
	"jetstream.meta_compact":            "when the meta log is snapshotted",
	"jetstream.meta_compact_size":       "when the meta log is snapshotted",
	"jetstream.meta_compact_sync":       "fsync of meta snapshots",
	"export.advertise":                  "descriptive",
	"export.description":                "descriptive",
	"export.info_url":                   "descriptive",
	"jetstream.max_concurrent_io":       "storage parallelism",
}

var refusedConfigKeys = keySet(map[string][]string{
	"": {"mappings", "maps", "default_sentinel", "gateway", "leaf", "leafnodes",
		"proxy_protocol", "proxies", "ocsp", "ocsp_cache",
		"operator", "operators", "roots", "root", "root_operators", "root_operator",
		"resolver", "account_resolver", "accounts_resolver", "resolver_tls",
		"resolver_preload", "resolver_pinned_accounts", "trusted", "trusted_keys",
		"websocket", "ws", "mqtt", "default_js_domain", "max_sub_tokens",
		"max_subscription_tokens", "feature_flags", "write_timeout"},
	"cluster": {"permissions"},
	"jetstream": {"key", "ek", "encryption_key", "prev_key", "prev_ek",
		"prev_encryption_key", "cipher", "tpm", "unique_tag"},
	"jetstream limits": {"max_ha_assets", "duplicate_window", "batch"},
	"authorization":    {"auth_callout", "auth_hook", "proxy_required"},
	"user":             {"proxy_required"},
	"account":          {"nkey", "mappings", "maps", "limits", "msg_trace", "trace_dest"},
	"account jetstream": {"max_bytes_required",
		"max_stream_bytes", "max_bytes", "mem_max_stream_bytes", "memory_max_stream_bytes",
		"disk_max_stream_bytes", "store_max_stream_bytes", "cluster_traffic"},
	"export": {"response", "response_type", "response_threshold", "threshold", "latency",
		"account_token_position", "allow_trace"},
	"import": {"share", "allow_trace"},
})

func keySet(byScope map[string][]string) map[string]bool {
	out := map[string]bool{}
	for scope, keys := range byScope {
		for _, k := range keys {
			out[scope+"."+k] = true
		}
	}
	return out
}

// unknownKey reports a key that no parser of scope handled.
func (ce *configErrors) unknownKey(scope, k string, tk any) {
	if t, ok := tk.(*conf.Token); ok && t.UsedVariable {
		return // a variable definition, not an option
	}
	key := scope + "." + strings.ToLower(k)
	where := ""
	if scope != "" {
		where = " in " + scope
	}
	switch {
	case ignoredConfigKeys[key] != "":
		ce.warnf(tk, "ignoring %q%s: %s, not implemented by Tern", k, where, ignoredConfigKeys[key])
	case refusedConfigKeys[key]:
		ce.errf(tk, "%q%s is not supported by Tern yet", k, where)
	default:
		ce.errf(tk, "unknown field %q%s", k, where)
	}
}
