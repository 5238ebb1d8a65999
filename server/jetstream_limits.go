package server

import (
	"strings"

	"github.com/tern-mq/nats-server/internal/conf"
)

// jsLimits are an account's JetStream limits; -1 means unlimited.
type jsLimits struct {
	MaxMemory  int64
	MaxStore   int64
	MaxStreams int
}

var unlimited = jsLimits{MaxMemory: -1, MaxStore: -1, MaxStreams: -1}

// parseAccountJetStream reads `jetstream: enabled` or a map of limits
// (max_mem|max_memory, max_file|max_store, max_streams) for an account.
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
		case "max_mem", "max_memory", "max_memory_store":
			l.MaxMemory = asStorageSize(ce, v)
		case "max_file", "max_store", "max_file_store":
			l.MaxStore = asStorageSize(ce, v)
		case "max_streams":
			l.MaxStreams = asInt(ce, v)
		case "enabled", "enable":
			acc.jetstream = asBool(ce, v)
		default:
			ce.warnf(v, "unknown field %q in account jetstream", k)
		}
	}
	acc.jsLimits = &l
}

// accountLimits are the account's own limits, or the server's
// max_memory_store/max_file_store when the account sets none.
func (jsa *jsAccount) limits() jsLimits {
	if l := jsa.acc.jsLimits; l != nil {
		return *l
	}
	o := jsa.js.srv.getOpts()
	l := unlimited
	if o.JetStreamMaxMemory > 0 {
		l.MaxMemory = o.JetStreamMaxMemory
	}
	if o.JetStreamMaxStore > 0 {
		l.MaxStore = o.JetStreamMaxStore
	}
	return l
}

// usage sums the bytes the account's streams hold, per storage type.
func (jsa *jsAccount) usage() (mem, store uint64) {
	for _, mset := range jsa.streamList() {
		var st StreamState
		mset.st().FastState(&st)
		if mset.config().Storage == MemoryStorage {
			mem += st.Bytes
		} else {
			store += st.Bytes
		}
	}
	return mem, store
}

// checkStorage refuses a message that would take the account past its
// storage limit. In a cluster only the account's own limits count (the
// server-wide max_*_store are one server's capacity), over every replica
// on every server (jetstream_usage.go), the message once per replica.
func (jsa *jsAccount) checkStorage(mset *stream, size uint64) *ApiError {
	jc := jsa.js.cluster
	if jc != nil && jsa.acc.jsLimits == nil {
		return nil
	}
	l := jsa.limits()
	if l.MaxStore < 0 && l.MaxMemory < 0 {
		return nil
	}
	cfg := mset.config()
	limit := l.MaxStore
	if cfg.Storage == MemoryStorage {
		limit = l.MaxMemory
	}
	if limit < 0 {
		return nil
	}
	var used uint64
	if jc != nil {
		used = jsa.clusterUsage(jc, cfg.Storage)
		size *= uint64(max(1, cfg.Replicas))
	} else if mem, store := jsa.usage(); cfg.Storage == MemoryStorage {
		used = mem
	} else {
		used = store
	}
	if used+size > uint64(limit) {
		return errInsufficientResources()
	}
	return nil
}
