package server

import (
	"crypto/subtle"
	"crypto/x509"
	"encoding/base64"
	"strings"
	"time"

	"github.com/nats-io/nkeys"
	"golang.org/x/crypto/bcrypt"
)

// authConfig is the server's view of who may connect, rebuilt on reload.
type authConfig struct {
	required bool
	token    string
	user     string
	password string
	users    map[string]*User
	nkeys    map[string]*NkeyUser
	noAuth   string
	tlsMap   bool // verify_and_map: users come from client certificates
}

func buildAuth(o *Options) *authConfig {
	a := &authConfig{users: map[string]*User{}, nkeys: map[string]*NkeyUser{}, noAuth: o.NoAuthUser,
		tlsMap: o.TLSMap && o.TLSConfig != nil}
	a.token, a.user, a.password = o.Authorization, o.Username, o.Password
	for _, u := range o.Users {
		a.users[u.Username] = u
	}
	for _, n := range o.Nkeys {
		a.nkeys[n.Nkey] = n
	}
	a.required = a.token != "" || a.user != "" || len(a.users) > 0 || len(a.nkeys) > 0
	return a
}

func (a *authConfig) needsNonce() bool { return len(a.nkeys) > 0 }

// comparePasswords accepts bcrypt hashes as nats-server does.
func comparePasswords(stored, given string) bool {
	if strings.HasPrefix(stored, "$2a$") || strings.HasPrefix(stored, "$2b$") || strings.HasPrefix(stored, "$2y$") {
		return bcrypt.CompareHashAndPassword([]byte(stored), []byte(given)) == nil
	}
	return subtle.ConstantTimeCompare([]byte(stored), []byte(given)) == 1
}

// binding is who a client authenticated as.
type binding struct {
	acc     *Account
	user    string
	perms   *Permissions
	allowed map[string]struct{} // connection types; empty allows all
}

// authenticate checks the CONNECT credentials and binds the client to its
// account and permissions.
func (s *Server) authenticate(c *client, co *ClientOpts) bool {
	b, ok := s.checkAuth(s.getAuth(), c.nonce, co, c.peerCert())
	ok = ok && connTypeAllowed(b.allowed, c.connType())
	if ok {
		s.bindClient(c, b.acc, b.user, b.perms)
	}
	return ok
}

// checkAuth decides whether credentials are valid under a.
// cert is the client's verified TLS certificate, if it sent one.
func (s *Server) checkAuth(a *authConfig, nonce string, co *ClientOpts, cert *x509.Certificate) (binding, bool) {
	if !a.required {
		return binding{acc: s.globalAccount()}, true
	}
	switch {
	case co.Nkey != "":
		return s.checkNkey(a, nonce, co)
	case a.tlsMap && len(a.users) > 0:
		return s.checkCertUser(a, cert)
	case co.Token != "":
		ok := a.token != "" && comparePasswords(a.token, co.Token)
		return binding{acc: s.globalAccount()}, ok
	case co.Username != "":
		return s.checkUser(a, co.Username, co.Password, true)
	case a.noAuth != "":
		return s.checkUser(a, a.noAuth, "", false)
	}
	return binding{}, false
}

func (s *Server) checkUser(a *authConfig, name, pass string, check bool) (binding, bool) {
	if u, ok := a.users[name]; ok {
		if check && !comparePasswords(u.Password, pass) {
			return binding{}, false
		}
		return binding{acc: s.accountOf(u.Account), user: name, perms: u.Permissions, allowed: u.AllowedConnectionTypes}, true
	}
	if a.user != "" && name == a.user && (!check || comparePasswords(a.password, pass)) {
		return binding{acc: s.globalAccount(), user: name}, true
	}
	return binding{}, false
}

func (s *Server) checkNkey(a *authConfig, nonce string, co *ClientOpts) (binding, bool) {
	nu, ok := a.nkeys[co.Nkey]
	if !ok || nonce == "" {
		return binding{}, false
	}
	sig, err := base64.RawURLEncoding.DecodeString(co.Sig)
	if err != nil {
		if sig, err = base64.StdEncoding.DecodeString(co.Sig); err != nil {
			return binding{}, false
		}
	}
	pub, err := nkeys.FromPublicKey(co.Nkey)
	if err != nil || pub.Verify([]byte(nonce), sig) != nil {
		return binding{}, false
	}
	return binding{acc: s.accountOf(nu.Account), user: co.Nkey, perms: nu.Permissions, allowed: nu.AllowedConnectionTypes}, true
}

// reauthorizeClients re-checks every client against the current auth
// config after a reload: clients whose credentials no longer hold are
// closed with an Authorization Violation, the others get the new
// permissions.
func (s *Server) reauthorizeClients() {
	a := s.getAuth()
	s.mu.Lock()
	clients := make([]*client, 0, len(s.clients))
	for _, c := range s.clients {
		clients = append(clients, c)
	}
	s.mu.Unlock()
	for _, c := range clients {
		c.mu.Lock()
		co, pending, nonce := c.opts, !c.connected && c.authTimer != nil, c.nonce
		c.mu.Unlock()
		if pending {
			continue // still within its auth timeout; CONNECT will be checked
		}
		b, ok := s.checkAuth(a, nonce, &co, c.peerCert())
		if !ok || !connTypeAllowed(b.allowed, c.connType()) {
			s.Noticef("%s - credentials revoked by reload", c)
			c.sendErrAndClose("Authorization Violation", AuthenticationViolation)
			continue
		}
		s.bindClient(c, b.acc, b.user, b.perms)
		c.removeDeniedSubs()
	}
}

// accountOf resolves a configured account to the registered one.
func (s *Server) accountOf(acc *Account) *Account {
	if acc == nil {
		return s.globalAccount()
	}
	if reg := s.accs.lookup(acc.Name); reg != nil {
		return reg
	}
	return s.globalAccount()
}

func (s *Server) bindClient(c *client, acc *Account, user string, p *Permissions) {
	c.mu.Lock()
	old := c.acc
	c.acc, c.user = acc, user
	c.perms = newClientPerms(p)
	c.bound.Store(&clientBound{acc: c.acc, perms: c.perms})
	subs := c.subs
	if old != nil && old != acc {
		c.subs = map[string]*subscription{}
	}
	c.mu.Unlock()
	if old == acc {
		return
	}
	if old != nil {
		for _, sub := range subs {
			old.unsubscribe(sub)
		}
		old.nclients.Add(-1)
	}
	acc.nclients.Add(1)
}

// startAuthTimer closes the client if it does not authenticate in time.
func (c *client) startAuthTimer(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.authTimer = time.AfterFunc(d, func() {
		c.mu.Lock()
		done := c.connected || c.closing
		c.mu.Unlock()
		if !done {
			c.srv.Debugf("%s - Authentication Timeout", c)
			c.sendErrAndClose("Authentication Timeout", AuthenticationTimeout)
		}
	})
}
