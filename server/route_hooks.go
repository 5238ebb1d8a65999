package server

// routeHooks are what the route layer tells the layer above it about. The
// route code knows nothing of streams: JetStream registers its hooks as it
// starts (jetstream_routes.go), and with none registered the route layer
// does nothing more. Both run on a route's read loop or in removeRoute,
// with no lock held.
type routeHooks struct {
	// unserved: the copy of queue group queue in a routed message found no
	// member here and goes no further (route_deliver.go: none on another
	// route either, or it was re-routed already). reply may be empty. hdr
	// and msg are views of the route's read buffer, valid only during the
	// call.
	unserved func(acc *Account, subject, reply, queue string, hdr, msg []byte)
	// serverGone: the last route to the named server was removed.
	serverGone func(name string)
	// peerProto: a route to the named server registered, which advertised
	// route protocol proto (Server.routeProtoSeen is updated first).
	peerProto func(name string, proto int)
}
