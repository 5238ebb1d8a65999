package server

import (
	"encoding/json"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/internal/lockorder"
)

// Account storage across a cluster. Each JetStream server publishes, every
// usageReportEvery, the bytes of each stream replica it holds on
// usageSubject in the system account; each keeps the latest report of every
// other server. A publish to a stream of an account with its own storage
// limits is refused (10023 insufficient resources) when the account's
// streams, each counted once per replica (as nats-server counts them), plus
// the message once per replica, would pass the limit. A stream held here
// counts with its local size (current for the stream published to, at most
// usageRefresh old for the others, jetstream_limits.go); one held only
// elsewhere counts with the largest size reported for it.
//
// The check is made before a message is proposed, by the stream's leader,
// so replicas stay deterministic: a refused message never enters the log.
// It is approximate, as nats-server's: the sizes of streams held elsewhere
// are up to a second old. Without a system account no reports travel and
// only the streams held here count.

const (
	usageSubject     = "$JSC.USAGE"
	usageReportEvery = time.Second
	// usageReportTTL drops the report of a server gone silent (stopped,
	// or cut off): its replicas are counted again once it reports.
	usageReportTTL = 5 * usageReportEvery
)

type usageReport struct {
	Server  string        `json:"server"`
	Streams []streamUsage `json:"streams,omitempty"`
}

// streamUsage is one stream replica's size.
type streamUsage struct {
	Account  string      `json:"account"`
	Stream   string      `json:"stream"`
	Storage  StorageType `json:"storage"`
	Replicas int         `json:"replicas"`
	Bytes    uint64      `json:"bytes"`
}

// remoteUsage keeps the latest report of each other server.
type remoteUsage struct {
	mu lockorder.Mutex[lockorder.RemoteUsage]
	by map[string]usageSeen
}

type usageSeen struct {
	at      time.Time
	streams []streamUsage
}

func (r *remoteUsage) record(rep *usageReport, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.by == nil {
		r.by = map[string]usageSeen{}
	}
	r.by[rep.Server] = usageSeen{at: now, streams: rep.Streams}
}

// total sums, over the fresh reports, the sizes times replicas of the
// account's streams of one storage type that skip does not name (the ones
// held here), each stream once at the largest size reported for it.
// skip is called without mu (it takes jsAccount.mu): the reports' stream
// lists are replaced, never changed, so they are read after mu is released.
func (r *remoteUsage) total(account string, storage StorageType, skip func(stream string) bool, now time.Time) uint64 {
	r.mu.Lock()
	var fresh [][]streamUsage
	for server, seen := range r.by {
		if now.Sub(seen.at) > usageReportTTL {
			delete(r.by, server)
			continue
		}
		fresh = append(fresh, seen.streams)
	}
	r.mu.Unlock()
	largest := map[string]uint64{}
	for _, streams := range fresh {
		for _, u := range streams {
			if u.Account == account && u.Storage == storage && !skip(u.Stream) {
				largest[u.Stream] = max(largest[u.Stream], u.Bytes*uint64(max(1, u.Replicas)))
			}
		}
	}
	var sum uint64
	for _, b := range largest {
		sum += b
	}
	return sum
}

// startUsageReports subscribes to the other servers' reports and starts
// sending this one's.
func (jc *jsCluster) startUsageReports() {
	s := jc.js.srv
	sys := s.SystemAccount()
	if sys == nil {
		return
	}
	_, _ = sys.subscribeInternal(usageSubject, "", func(_ *subscription, _ *client, _ *Account, _, _ string, _, msg []byte) {
		var rep usageReport
		if json.Unmarshal(msg, &rep) == nil && rep.Server != "" && rep.Server != s.Name() {
			jc.usage.record(&rep, s.clock.Now())
		}
	})
	if s.getOpts().raftHost != nil {
		return // the host calls reportUsage
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for !s.sleepOnClock(usageReportEvery) {
			jc.reportUsage()
		}
	}()
}

// usageSender is what reportUsage remembers between two reports (touched
// only by its caller, one goroutine: the loop, or a raftHost's).
type usageSender struct {
	held bool          // the last report sent named a replica
	sent atomic.Uint64 // reports sent (tests)
}

// reportUsage tells every server the sizes of the replicas held here. A
// server holding no replica of an account with limits of its own says so
// once: an empty report counts for nothing at a receiver, as none does
// (the previous one expires after usageReportTTL), so an idle cluster
// without such accounts sends none every second.
func (jc *jsCluster) reportUsage() {
	s := jc.js.srv
	sys := s.SystemAccount()
	if sys == nil {
		return
	}
	rep := jc.js.localUsage()
	held := len(rep.Streams) > 0
	if !held && !jc.usageSend.held {
		return
	}
	jc.usageSend.held = held
	jc.usageSend.sent.Add(1)
	b, _ := json.Marshal(rep)
	s.deliver(nil, sys, usageSubject, "", nil, b)
}

// localUsage is this server's report: every stream replica held here of
// the accounts with limits of their own (only those are checked).
func (js *jetStream) localUsage() *usageReport {
	rep := &usageReport{Server: js.srv.Name()}
	for _, jsa := range js.accountList() {
		if jsa.acc.jsLimits == nil {
			continue
		}
		for _, m := range jsa.streamList() {
			var st StreamState
			m.st().FastState(&st)
			cfg := m.config()
			rep.Streams = append(rep.Streams, streamUsage{Account: jsa.acc.Name, Stream: m.name,
				Storage: cfg.Storage, Replicas: cfg.Replicas, Bytes: st.Bytes})
		}
	}
	return rep
}

// clusterUsage is what the account's streams of one storage type hold over
// the cluster, every replica counted (see the top of the file).
func (jsa *jsAccount) clusterUsage(jc *jsCluster, storage StorageType) uint64 {
	var sum uint64
	for _, m := range jsa.streamList() {
		if m.config().Storage == storage {
			sum += jsa.share(m)
		}
	}
	return sum + jc.usage.total(jsa.acc.Name, storage, jsa.holds, jc.js.srv.clock.Now())
}

// holds reports whether a replica of the stream is held here.
func (jsa *jsAccount) holds(name string) bool { return jsa.lookup(name) != nil }
