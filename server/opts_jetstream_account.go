package server

import (
	"strings"

	"github.com/nats-io/nats-server/v2/conf"
)

// An account's JetStream block in the config file. The config layer owns
// it (as every other key); the JetStream layer reads acc.jsLimits
// (jetstream_limits.go).

// jsLimits are an account's JetStream limits; -1 means unlimited.
type jsLimits struct {
	MaxMemory  int64
	MaxStore   int64
	MaxStreams int
	// MaxConsumers caps each stream's consumers, MaxAckPending each
	// consumer's max_ack_pending (and lowers its default).
	MaxConsumers  int
	MaxAckPending int
}

var unlimited = jsLimits{MaxMemory: -1, MaxStore: -1, MaxStreams: -1, MaxConsumers: -1, MaxAckPending: -1}

// parseAccountJetStream reads `jetstream: enabled` or a map of limits
// (max_mem|max_memory, max_file|max_store, max_streams, max_consumers,
// max_ack_pending) for an account.
func parseAccountJetStream(ce *configErrors, acc *Account, tk any) {
	m, ok := conf.Unwrap(tk).(map[string]any)
	if !ok {
		acc.jetstream = jsEnabledValue(conf.Unwrap(tk))
		return
	}
	acc.jetstream = true
	l := unlimited
	for k, v := range m {
		switch strings.ToLower(k) {
		case "max_mem", "max_memory", "max_memory_store", "mem", "memory":
			l.MaxMemory = asStorageSize(ce, v)
		case "max_file", "max_store", "max_file_store", "max_disk", "store", "disk":
			l.MaxStore = asStorageSize(ce, v)
		case "max_streams", "streams":
			l.MaxStreams = asInt(ce, v)
		case "max_consumers", "consumers":
			l.MaxConsumers = asInt(ce, v)
		case "max_ack_pending":
			l.MaxAckPending = asInt(ce, v)
		case "enabled", "enable":
			acc.jetstream = asBool(ce, v)
		case "disabled", "disable":
			acc.jetstream = !asBool(ce, v)
		default:
			ce.unknownKey("account jetstream", k, v)
		}
	}
	acc.jsLimits = &l
}
