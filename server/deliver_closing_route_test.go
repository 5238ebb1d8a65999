package server

import "testing"

// A copy for a route that is closing is not sent, and not counted: a
// publish that only the dead leader's ingest group matched (its interest
// not yet removed) then gets "no responders" at once, instead of nothing
// until the client's timeout (issue 20: at 10,000 streams, publishes sent
// 0.09 s after a kill -9 timed out).
func TestRouteForwardsSkipClosingRoute(t *testing.T) {
	s := runServer(t, nil)
	acc := s.globalAccount()
	closing := &client{srv: s}
	closing.closing = true
	var f routeForwards
	f.queue(closing, streamIngestQueue)
	if n := f.send(nil, nil, acc, "S", "_INBOX.x", nil, []byte("x")); n != 0 {
		t.Fatalf("a closing route counted as %d receivers", n)
	}
}
