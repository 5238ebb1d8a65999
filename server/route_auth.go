package server

import (
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// Route authentication. A server with cluster { authorization { user,
// password } } accepts a route only after the peer that dialled it sent
//
//	CONNECT {"user":"...","pass":"..."}
//
// right after its INFO, within the authorization timeout. Until then the
// connection is not registered: nothing it sends is read beyond those two
// lines (no RS+, RMSG, RAFT or gossip), and it learns nothing but our INFO,
// which then carries no peer list. A dialling server sends the credentials
// of the route URL (nats-route://user:pass@host:port) or, when the URL has
// none (configured without them, or learned by gossip), its own cluster
// credentials. Servers that need no authorization ignore the CONNECT.

// routeConnect is the CONNECT a dialling server sends on a route.
type routeConnect struct {
	User string `json:"user,omitempty"`
	Pass string `json:"pass,omitempty"`
	Name string `json:"name,omitempty"`
}

// defaultRouteAuthTimeout applies when the authorization sets no timeout.
const defaultRouteAuthTimeout = 2 * time.Second

var errRouteAuth = errors.New("route authorization violation")

func routeAuthRequired(o *Options) bool { return o.Cluster.Username != "" }

// routeConnectLine is the CONNECT a dialling server sends for r.
func (s *Server) routeConnectLine(r *route) []byte {
	o := s.getOpts()
	rc := routeConnect{User: o.Cluster.Username, Pass: o.Cluster.Password, Name: s.id}
	if r.url != nil && r.url.User != nil {
		rc.User = r.url.User.Username()
		rc.Pass, _ = r.url.User.Password()
	}
	b, _ := json.Marshal(rc)
	return append(append([]byte("CONNECT "), b...), "\r\n"...)
}

// authenticateRoute reads the dialling peer's CONNECT and checks it.
func (s *Server) authenticateRoute(r *route) error {
	o := s.getOpts()
	timeout := defaultRouteAuthTimeout
	if o.Cluster.AuthTimeout > 0 {
		timeout = time.Duration(o.Cluster.AuthTimeout * float64(time.Second))
	}
	nc := r.c.nc
	_ = nc.SetReadDeadline(time.Now().Add(timeout))
	line, err := r.br.ReadSlice('\n')
	_ = nc.SetReadDeadline(time.Time{})
	var rc routeConnect
	ok := err == nil && strings.HasPrefix(string(line), "CONNECT ") &&
		json.Unmarshal(line[len("CONNECT "):], &rc) == nil &&
		rc.User == o.Cluster.Username && comparePasswords(o.Cluster.Password, rc.Pass)
	if ok {
		return nil
	}
	s.Errorf("Router authentication error from %s", nc.RemoteAddr())
	_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = nc.Write([]byte("-ERR 'Authorization Violation'\r\n"))
	return errRouteAuth
}

// parseClusterAuthorization reads cluster { authorization { user, password,
// timeout } }; like nats-server, routes take one user and no token.
func (o *Options) parseClusterAuthorization(ce *configErrors, tk any) {
	for k, v := range asMap(ce, tk) {
		switch strings.ToLower(k) {
		case "user", "username":
			o.Cluster.Username = asString(ce, v)
		case "pass", "password":
			o.Cluster.Password = asString(ce, v)
		case "timeout":
			o.Cluster.AuthTimeout = asSeconds(ce, v)
		case "users":
			ce.errf(tk, "Cluster authorization does not allow multiple users")
		case "token":
			ce.errf(tk, "Cluster authorization does not support tokens")
		default:
			ce.unknownKey("cluster authorization", k, v)
		}
	}
	if o.Cluster.Password != "" && o.Cluster.Username == "" {
		ce.errf(tk, "cluster authorization needs a user with its password")
	}
}
