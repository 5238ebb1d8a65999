package server

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

const clusterTLSConf = `
cluster {
  name: TLS
  listen: "127.0.0.1:-1"
  tls { cert_file: "%CERT%", key_file: "%KEY%", ca_file: "%CA%", verify: true, timeout: 2 }
}
`

// errLog records error and warning log lines (the rest is dropped).
type errLog struct {
	fatalLog
	mu    sync.Mutex
	errs  []string
	warns []string
}

func (l *errLog) Warnf(format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.warns = append(l.warns, fmt.Sprintf(format, v...))
}

// warned is the first warning containing all of parts, or "".
func (l *errLog) warned(parts ...string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range l.warns {
		if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(w, p) }) {
			return w
		}
	}
	return ""
}

func (l *errLog) Errorf(format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, fmt.Sprintf(format, v...))
}

func (l *errLog) has(sub string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.errs {
		if strings.Contains(e, sub) {
			return true
		}
	}
	return false
}

// clusterTLSOptions are options for a cluster member with route TLS from
// ca, routing to seed when set.
func clusterTLSOptions(t *testing.T, ca *testCA, name string, seed *url.URL) *Options {
	t.Helper()
	c := ca.serverCert(name)
	p := writeConf(t, clusterTLSConf, map[string]string{"CERT": c.certFile, "KEY": c.keyFile, "CA": ca.caFile})
	o := confOptions(t, p)
	o.ServerName = name
	o.Cluster.Port = RANDOM_PORT
	if seed != nil {
		o.Routes = []*url.URL{seed}
	}
	return o
}

func TestTLSRouteClusterFormsAndRejectsOtherCA(t *testing.T) {
	ca := newTestCA(t, "ca")
	var servers []*Server
	var seed *url.URL
	for i := range 3 {
		o := clusterTLSOptions(t, ca, fmt.Sprintf("S%d", i+1), seed)
		if o.Cluster.TLSConfig == nil || o.Cluster.TLSConfig.RootCAs == nil {
			t.Fatal("cluster tls block not applied")
		}
		s := runServer(t, o)
		if seed == nil {
			seed = &url.URL{Scheme: "nats-route", Host: s.ClusterAddr().String()}
		}
		servers = append(servers, s)
	}
	waitForMesh(t, servers)
	for _, s := range servers {
		for _, r := range s.routeList() {
			if r.c.peerCert() == nil {
				t.Fatalf("%s: route to %s is not TLS", s.Name(), r.remote.Name)
			}
		}
	}
	sub, err := nats.Connect(servers[2].ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ch, _ := sub.SubscribeSync("over.tls")
	sub.Flush()
	waitForInterest(t, servers, "over.tls")
	pub, err := nats.Connect(servers[0].ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	pub.Publish("over.tls", []byte("hi"))
	if m, err := ch.NextMsg(5 * time.Second); err != nil || string(m.Data) != "hi" {
		t.Fatalf("message across TLS routes: %v", err)
	}

	// A server whose certificate comes from another CA cannot join: the
	// seed refuses its certificate, and it refuses the seed's.
	other := newTestCA(t, "other")
	o := clusterTLSOptions(t, other, "ROGUE", seed)
	rl := &errLog{}
	rogue := runServerLogged(t, o, rl)
	waitFor(t, 10*time.Second, "rogue's route handshake to fail", func() bool {
		return rl.has("TLS route handshake error")
	})
	if rogue.NumRoutes() != 0 {
		t.Fatal("server with a certificate from another CA joined")
	}
	for _, s := range servers {
		if s.NumRoutes() != 2 {
			t.Fatalf("%s has %d routes", s.Name(), s.NumRoutes())
		}
	}
}

// runServerLogged starts a server that logs errors to l.
func runServerLogged(t *testing.T, o *Options, l *errLog) *Server {
	t.Helper()
	s, err := NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	s.SetLogger(l, false, false)
	s.Start()
	t.Cleanup(s.Shutdown)
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	return s
}

// A plain route to a TLS cluster port is refused.
func TestTLSRoutePlainPeerRefused(t *testing.T) {
	ca := newTestCA(t, "ca")
	l := &errLog{}
	s := runServerLogged(t, clusterTLSOptions(t, ca, "S1", nil), l)
	o := testOptions()
	o.ServerName, o.Cluster.Name, o.Cluster.Host, o.Cluster.Port = "PLAIN", "TLS", "127.0.0.1", RANDOM_PORT
	o.Routes = []*url.URL{{Scheme: "nats-route", Host: s.ClusterAddr().String()}}
	p := runServer(t, o)
	waitFor(t, 10*time.Second, "the plain route refused", func() bool {
		return l.has("TLS route handshake error") && l.has("first record does not look like a TLS handshake")
	})
	if s.NumRoutes() != 0 || p.NumRoutes() != 0 {
		t.Fatal("plain route accepted by a TLS cluster port")
	}
}

// A reload re-reads the cluster tls block (new routes use it) instead of
// refusing it as a cluster change.
func TestTLSRouteReload(t *testing.T) {
	ca := newTestCA(t, "ca")
	c := ca.serverCert("S1")
	p := writeConf(t, "listen: \"127.0.0.1:-1\"\n"+clusterTLSConf, map[string]string{"CERT": c.certFile, "KEY": c.keyFile, "CA": ca.caFile})
	o := confOptions(t, p)
	s := runServer(t, o)
	before := s.getOpts().Cluster.TLSConfig
	if err := s.Reload(); err != nil {
		t.Fatalf("reload with cluster tls: %v", err)
	}
	if s.getOpts().Cluster.TLSConfig == before {
		t.Fatal("cluster tls block not re-read")
	}
}
