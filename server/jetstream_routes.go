package server

// JetStream's answers to route events (route_hooks.go), registered when
// JetStream starts.

func (s *Server) registerJetStreamRouteHooks() {
	s.routeHooks.Store(&routeHooks{unserved: s.unservedStreamPublish, serverGone: s.streamServerGone, peerProto: s.peerProtoHeard})
}

// streamIngestQueue is the queue group a replicated stream's leader
// subscribes its subjects as (stream_cluster.go startServing). While
// leadership moves, a server may know the interest of the old leader and
// of the new one at once (their RS- and RS+ come over different routes);
// as members of one queue group they get one copy between them, where two
// plain subscriptions would each get one and the publish would be stored
// twice (issue 19). A copy that reaches the old leader goes on once to the
// new one (route_deliver.go). Core subscribers of the same subjects are
// plain or other groups, served as before. The name is reserved: a
// client's SUB in this queue group would join the leaders' group and take
// their copies of publishes (which then were never stored), so it is
// refused as a subscription its permissions deny (subs.go ProcessSub:
// -ERR 'Permissions Violation for Subscription to "<subject>" using queue
// "_js_ingest_"', the connection stays up). nats-server reserves no queue
// name; no client of it is known to use this one.
const streamIngestQueue = "_js_ingest_"

// unservedStreamPublish answers a stream publish whose one copy reached
// no leader (route_deliver.go dropped it: the server it was routed to no
// longer leads, and it was re-routed already or knows no other leader)
// with a 503 status: it was not stored, and the client retries. Only for
// the leaders' queue group: a 503 must mean "certainly not stored". So
// nothing is answered either while a peer older than route protocol 7
// has plain interest in the subject: its leader subscribes plainly and may
// have had a copy of its own.
func (s *Server) unservedStreamPublish(acc *Account, subject, reply, queue string, hdr, msg []byte) {
	if reply == "" || queue != streamIngestQueue {
		return
	}
	js := s.js.Load()
	if js == nil || js.cluster == nil || !js.cluster.streamSubject(acc.Name, subject) {
		return
	}
	if olderPlainInterest(acc, subject) {
		return
	}
	s.deliver(nil, acc, reply, "", []byte("NATS/1.0 503\r\nNats-Subject: "+subject+"\r\n\r\n"), nil)
}

// streamServerGone forgets the stream leaderships of a server whose last
// route went (not when a losing duplicate route or a stale one from before
// a restart does).
func (s *Server) streamServerGone(name string) {
	if js := s.js.Load(); js != nil && js.cluster != nil {
		js.cluster.leaders.dropServer(name)
	}
}

// peerProtoHeard keeps the route protocol a peer advertised
// (jetstream_meta_protos.go).
func (s *Server) peerProtoHeard(name string, proto int) {
	if js := s.js.Load(); js != nil && js.cluster != nil {
		js.cluster.notePeerProto(name, proto)
	}
}
