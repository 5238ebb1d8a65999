package server

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Cluster-only subjects: subjects that only the servers themselves publish
// on, because what arrives there is acted on as the cluster's own word. The
// first is metaCopySubject ($JSC.MCOPY, jetstream_meta_copy.go): a
// copy names any account and runs a stream create, update or delete for it
// with another request's id. The system account's permissions do not make
// a publisher trusted there: no client connection may publish on it (or
// name it as a reply subject), whatever its account and permissions; no
// import may carry a message to or from it; and a copy is run only when
// this server published it (no connection: c == nil) or it came over a
// route from a meta peer whose route protocol keeps the subject to the
// cluster (routeProtoClusterOnly): an older peer would relay its clients'
// publishes there. A refused message is dropped and counted, and logged
// at most once a minute; a copy from a meta peer of that older protocol
// (a rolling upgrade) is logged as what it most likely is, a held write's
// copy not run (olderCopyNotRun), since it cannot be told from a forgery. "This server published it" holds only because
// the server publishes nothing a client wrote on a subject a client chose
// in the system account: JetStream, whose consumers do (a push consumer's
// deliver subject), cannot be enabled there (opts_validate.go
// systemJetStream, as in nats-server), and a routed message
// naming a cluster-only reply subject (an older peer's client's) is
// dropped where it arrives (route_proto.go routeMsg), before a responder
// here could answer there.
//
// nats-server, for comparison, refuses a client's publish to $NRG. (its
// raft subjects) only outside the system account, and leaves $JSC. to the
// system account's permissions: a system user may publish anything there.
// Tern's raft traffic is a route operation (RAFT), not a subject, so no
// client can reach it at all; its other $JSC. subjects (leader
// announcements and lists, stream info questions, resignation
// acknowledgements, usage reports) stay open to system users, as in
// nats-server.

// The other is catchUpSubject ($JSC.CATCHUP, jetstream_balance_hold.go):
// a server's word there that it catches up after a restart stops the
// others' leader balancing toward it; a forger could stop it for good.
// A word counts only when it came over the named server's own route of
// routeProtoCatchUp or later.

// clusterOnlySubject reports whether subject is one only servers publish.
func clusterOnlySubject(subject string) bool {
	return subject == metaCopySubject || subject == catchUpSubject
}

// clusterOnlyLogEvery spaces the log lines about refused publishes.
const clusterOnlyLogEvery = time.Minute

// clusterOnlyGuard counts the refused messages (Server.clusterOnly)
// and the held writes' copies a meta leader did not run for an older
// peer's sake (jetstream_meta_copy.go).
type clusterOnlyGuard struct {
	refused  atomic.Int64
	loggedAt atomic.Int64 // server clock, ns, of the last log line
	notRun   atomic.Int64 // copies not run for an older peer
	olderAt  atomic.Int64 // the last log line about one
}

// refuseClusterOnly counts a message to a cluster-only subject that did
// not come from the cluster, logging it unless it logged one lately.
func (s *Server) refuseClusterOnly(from, subject string) {
	n := s.clusterOnly.refused.Add(1)
	if s.logDue(&s.clusterOnly.loggedAt) {
		s.Warnf("Dropped a message to cluster-only subject %q from %s (%d dropped since start; logged at most once a minute)", subject, from, n)
	}
}

// olderCopyNotRun counts a held write's copy the meta leader did not run
// because of an older peer (why), logging it unless it logged one lately.
func (s *Server) olderCopyNotRun(why string) {
	n := s.clusterOnly.notRun.Add(1)
	if s.logDue(&s.clusterOnly.olderAt) {
		s.Warnf("JetStream cluster: a held stream write's copy was not run: %s; its client times out, as before held writes "+
			"(%d not run since start; logged at most once a minute)", why, n)
	}
}

// logDue reports whether a line limited by at may be logged now (and
// takes the minute if so).
func (s *Server) logDue(at *atomic.Int64) bool {
	now := s.clock.Now().UnixNano()
	last := at.Load()
	return (last == 0 || now-last >= int64(clusterOnlyLogEvery)) && at.CompareAndSwap(last, now)
}

// filtersClusterOnly reports whether this server keeps its clients off
// the cluster-only subjects: a test that makes it look older than
// routeProtoClusterOnly (Options.routeProto) turns it off, as an older
// server does not.
func (s *Server) filtersClusterOnly() bool {
	own := s.getOpts().routeProto
	return own == 0 || own >= routeProtoClusterOnly
}

// clusterOnlyPub refuses a client's publish whose subject or reply, bad,
// its caller found cluster-only (and answers it as a permissions
// violation), unless this server looks older (filtersClusterOnly).
func (c *client) clusterOnlyPub(bad string) bool {
	if !c.srv.filtersClusterOnly() {
		return false
	}
	c.srv.refuseClusterOnly(c.String(), bad)
	c.sendErr(fmt.Sprintf("Permissions Violation for Publish to %q", bad))
	return true
}
