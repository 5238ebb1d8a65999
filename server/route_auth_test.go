package server

import (
	"bufio"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func withRouteAuth(user, pass string) func(int, *Options) {
	return func(_ int, o *Options) {
		o.Cluster.Username, o.Cluster.Password = user, pass
		// Copies: runCluster shares the seed URL between servers.
		for i, u := range o.Routes {
			cp := *u
			cp.User = url.UserPassword(user, pass)
			o.Routes[i] = &cp
		}
	}
}

// A cluster whose routes need credentials forms its mesh: the seed route
// carries them in its URL, gossiped routes use the server's own.
func TestRouteAuthMeshForms(t *testing.T) {
	servers := runCluster(t, 3, withRouteAuth("route", "s3cr3t"))
	sub := connectNATS(t, servers[2].ClientURL())
	s, _ := sub.SubscribeSync("auth.>")
	sub.Flush()
	waitForInterest(t, servers, "auth.x")
	pub := connectNATS(t, servers[0].ClientURL())
	pub.Publish("auth.x", []byte("hi"))
	if m, err := s.NextMsg(2 * time.Second); err != nil || string(m.Data) != "hi" {
		t.Fatalf("message across authenticated routes: %v %v", m, err)
	}
}

// A server that dials without the right credentials never becomes a peer.
func TestRouteAuthWrongCredentialsRefused(t *testing.T) {
	seedOpts := testOptions()
	seedOpts.ServerName, seedOpts.Cluster.Name = "SEED", "TEST"
	seedOpts.Cluster.Host, seedOpts.Cluster.Port = "127.0.0.1", RANDOM_PORT
	seedOpts.Cluster.Username, seedOpts.Cluster.Password = "route", "right"
	seed := runServer(t, seedOpts)
	for _, userinfo := range []*url.Userinfo{nil, url.UserPassword("route", "wrong"), url.UserPassword("other", "right")} {
		o := testOptions()
		o.ServerName, o.Cluster.Name = "JOINER", "TEST"
		o.Cluster.Host, o.Cluster.Port = "127.0.0.1", RANDOM_PORT
		o.Routes = []*url.URL{{Scheme: "nats-route", Host: seed.ClusterAddr().String(), User: userinfo}}
		joiner := runServer(t, o)
		// Wait until the seed has seen (and refused) at least two attempts;
		// it never registered a route (the joiner briefly counts one, until
		// it reads the seed's -ERR).
		before := seed.routes.attempts.Load()
		waitFor(t, 10*time.Second, "route attempts", func() bool { return seed.routes.attempts.Load() >= before+2 })
		seed.routes.mu.Lock()
		registered := seed.routes.rid
		seed.routes.mu.Unlock()
		if registered != 0 || seed.NumRoutes() != 0 {
			t.Fatalf("route with credentials %v formed", userinfo)
		}
		joiner.Shutdown()
	}
}

// routeStranger dials the cluster port as someone who knows the route
// protocol but not the credentials.
type routeStranger struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func dialRouteStranger(t *testing.T, s *Server) *routeStranger {
	nc, err := net.DialTimeout("tcp", s.ClusterAddr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	rs := &routeStranger{t: t, nc: nc, br: bufio.NewReader(nc)}
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	info, err := rs.br.ReadString('\n')
	if err != nil || !strings.HasPrefix(info, "INFO ") {
		t.Fatalf("expected INFO, got %q %v", info, err)
	}
	if !strings.Contains(info, `"auth_required":true`) || strings.Contains(info, `"peers"`) {
		t.Fatalf("handshake INFO to a stranger: %s", info)
	}
	return rs
}

// readAll returns everything the server sends until it closes the
// connection (or 3 s pass).
func (rs *routeStranger) readAll() string {
	_ = rs.nc.SetReadDeadline(time.Now().Add(3 * time.Second))
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := rs.br.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				rs.t.Fatalf("server kept the unauthenticated route open; got %q", b.String())
			}
			return b.String()
		}
	}
}

// A stranger on the cluster port, with no CONNECT or a wrong password,
// gets nothing processed: no interest registered, no messages sent to it,
// nothing it sends delivered, and the connection closed.
func TestRouteAuthStrangerGetsNothing(t *testing.T) {
	servers := runCluster(t, 2, withRouteAuth("route", "s3cr3t"))
	s := servers[0]
	local := connectNATS(t, s.ClientURL())
	inbox, _ := local.SubscribeSync("secret.>")
	local.Flush()
	info := fmt.Sprintf(`INFO {"server_id":"%s","server_name":"S2","cluster":"TEST","tern_route_proto":%d}`+"\r\n",
		servers[1].ID(), routeProto)
	attacks := []string{
		"",
		`CONNECT {"user":"route","pass":"wrong"}` + "\r\n",
		`CONNECT {"user":"route"}` + "\r\n",
	}
	for _, connect := range attacks {
		rs := dialRouteStranger(t, s)
		payload := info + connect + "RS+ $G >\r\nRMSG $G secret.injected - 1 - 0 2\r\nhi\r\n"
		if _, err := rs.nc.Write([]byte(payload)); err != nil {
			t.Fatal(err)
		}
		// Publish while the stranger is connected: it must not get it.
		pub := connectNATS(t, s.ClientURL())
		pub.Publish("secret.x", []byte("for members only"))
		pub.Flush()
		got := rs.readAll()
		if got != "-ERR 'Authorization Violation'\r\n" {
			t.Fatalf("stranger (%q) got %q", connect, got)
		}
		if m, err := inbox.NextMsg(time.Second); err != nil || m.Subject != "secret.x" {
			t.Fatalf("local delivery: %v %v", m, err)
		}
		if m, err := inbox.NextMsg(100 * time.Millisecond); err == nil {
			t.Fatalf("injected message delivered: %s", m.Subject)
		}
		// The real peer was not pushed out by the stranger claiming its id.
		if s.NumRoutes() != 1 || s.routeFor(servers[1].ID()) == nil {
			t.Fatalf("routes after stranger: %d", s.NumRoutes())
		}
	}
}

func TestRouteAuthConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "c.conf")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	o, err := ProcessConfigFile(write("cluster {\n port: -1\n authorization { user: route, password: pwd, timeout: 0.5 }\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if o.Cluster.Username != "route" || o.Cluster.Password != "pwd" || o.Cluster.AuthTimeout != 0.5 {
		t.Fatalf("cluster auth: %+v", o.Cluster)
	}
	for body, want := range map[string]string{
		"cluster {\n authorization { token: abc }\n}\n":                  "c.conf:2:2: Cluster authorization does not support tokens",
		"cluster {\n authorization { users: [{user: a, pass: b}] }\n}\n": "Cluster authorization does not allow multiple users",
		"cluster {\n authorization { user: a, bogus: 1 }\n}\n":           `unknown field "bogus" in cluster authorization`,
	} {
		_, err := ProcessConfigFile(write(body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", body, err, want)
		}
	}
}
