package server

import (
	"net/url"
	"testing"
)

// A server behind a proxy or NAT advertises another address than it
// listens on, and the route list every server shares names that address:
// it is this server, not a peer to wait for. Counting it made JetStream
// wait for a fourth server of three and never start its meta group.
func TestExpectedClusterSizeSkipsAdvertisedSelf(t *testing.T) {
	o := testOptions()
	o.ServerName = "A1"
	o.Cluster.Name = "ADV"
	o.Cluster.Host = "127.0.0.1"
	o.Cluster.Port = RANDOM_PORT
	o.Cluster.Advertise = "127.0.0.1:4999"
	o.Routes = []*url.URL{
		{Scheme: "nats-route", Host: "127.0.0.1:4999"}, // itself, as advertised
		{Scheme: "nats-route", Host: "127.0.0.1:5001"},
		{Scheme: "nats-route", Host: "127.0.0.1:5002"},
	}
	s := runServer(t, o)
	if n := s.expectedClusterSize(); n != 3 {
		t.Fatalf("expected cluster size %d, want 3", n)
	}
}
