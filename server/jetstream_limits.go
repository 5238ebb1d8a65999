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
// storage limit (one server; in a cluster the check would read state
// outside the stream's log, so it is not made there).
func (jsa *jsAccount) checkStorage(mset *stream, size uint64) *ApiError {
	l := jsa.limits()
	if (l.MaxStore < 0 && l.MaxMemory < 0) || jsa.js.cluster != nil {
		return nil
	}
	storage := mset.config().Storage
	limit := l.MaxStore
	if storage == MemoryStorage {
		limit = l.MaxMemory
	}
	if limit < 0 || jsa.js.cluster != nil {
		return nil
	}
	mem, store := jsa.usage()
	used := store
	if storage == MemoryStorage {
		used = mem
	}
	if used+size > uint64(limit) {
		return errInsufficientResources()
	}
	return nil
}
