package server

// routeHooks are what the route layer tells the layer above it about. The
// route code knows nothing of streams: JetStream registers its hooks as it
// starts (jetstream_routes.go), and with none registered the route layer
// does nothing more. Both run on a route's read loop or in removeRoute,
// with no lock held.
type routeHooks struct {
	// unserved: a message routed here to be served (plain or queue mode,
	// with a reply) found no local subscriber; forward says it may be
	// routed once more (rerouteOnce). hdr and msg are views of the
	// route's read buffer, valid only during the call.
	unserved func(acc *Account, subject, reply string, hdr, msg []byte, forward bool)
	// serverGone: the last route to the named server was removed.
	serverGone func(name string)
}
