package server

import (
	"github.com/nats-io/nats-server/v2/internal/lockorder"
	"time"
)

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
	used := jsa.usedCache.usedWith(jsa, mset, cfg.Storage, jsa.js.srv.clock.Now())
	if jc != nil {
		size *= uint64(max(1, cfg.Replicas))
	}
	if used+size > uint64(limit) {
		return errInsufficientResources()
	}
	return nil
}

// usageRefresh is how old the sum over the account's other streams may be
// when a publish is checked; the publishing stream itself is read each
// time, so one stream's publishers are held to the limit exactly.
const usageRefresh = 50 * time.Millisecond

// usageCache keeps the account's usage per storage type and each local
// stream's share of it, so that a publish reads one stream, not all. mu
// guards the fields only: the sums are made without it (they take
// jsAccount.mu, stream.mu and remoteUsage.mu), by one publisher at a time
// while the others use the previous sums.
type usageCache struct {
	mu         lockorder.Mutex[lockorder.UsageCache]
	at         time.Time
	total      [2]uint64 // by StorageType
	shares     map[*stream]uint64
	refreshing bool // a publisher is making new sums
}

// usedWith is the account's usage of storage, with mset's share read now.
func (u *usageCache) usedWith(jsa *jsAccount, mset *stream, storage StorageType, now time.Time) uint64 {
	u.mu.Lock()
	stale := u.shares == nil || now.Sub(u.at) > usageRefresh
	refresh := stale && (!u.refreshing || u.shares == nil)
	if refresh {
		u.refreshing = true
	}
	u.mu.Unlock()
	if refresh {
		total, shares := jsa.usageSums(now)
		u.mu.Lock()
		u.at, u.total, u.shares, u.refreshing = now, total, shares, false
		u.mu.Unlock()
	}
	u.mu.Lock()
	used := u.total[storage] - min(u.shares[mset], u.total[storage])
	u.mu.Unlock()
	return used + jsa.share(mset)
}

// usageSums adds up the account's usage per storage type and each local
// stream's share of it.
func (jsa *jsAccount) usageSums(now time.Time) (total [2]uint64, shares map[*stream]uint64) {
	shares = map[*stream]uint64{}
	for _, m := range jsa.streamList() {
		b := jsa.share(m)
		shares[m] = b
		total[m.config().Storage] += b
	}
	if jc := jsa.js.cluster; jc != nil {
		for _, storage := range []StorageType{FileStorage, MemoryStorage} {
			total[storage] += jc.usage.total(jsa.acc.Name, storage, jsa.holds, now)
		}
	}
	return total, shares
}

// share is what mset counts against the account: its bytes, once per
// replica in a cluster.
func (jsa *jsAccount) share(m *stream) uint64 {
	var st StreamState
	m.st().FastState(&st)
	if jsa.js.cluster == nil {
		return st.Bytes
	}
	return st.Bytes * uint64(max(1, m.config().Replicas))
}
