package server

import (
	"crypto/subtle"
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
}

func buildAuth(o *Options) *authConfig {
	a := &authConfig{users: map[string]*User{}, nkeys: map[string]*NkeyUser{}, noAuth: o.NoAuthUser}
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

// authenticate checks the CONNECT credentials and binds the client to its
// account and permissions.
func (s *Server) authenticate(c *client, co *connectOpts) bool {
	a := s.getAuth()
	if !a.required {
		s.bindClient(c, s.globalAccount(), "", nil)
		return true
	}
	switch {
	case co.Nkey != "":
		return s.authNkey(c, a, co)
	case co.Token != "":
		if a.token == "" || !comparePasswords(a.token, co.Token) {
			return false
		}
		s.bindClient(c, s.globalAccount(), "", nil)
		return true
	case co.Username != "":
		return s.authUser(c, a, co.Username, co.Password, true)
	case a.noAuth != "":
		return s.authUser(c, a, a.noAuth, "", false)
	}
	return false
}

func (s *Server) authUser(c *client, a *authConfig, name, pass string, check bool) bool {
	if u, ok := a.users[name]; ok {
		if check && !comparePasswords(u.Password, pass) {
			return false
		}
		s.bindClient(c, s.accountOf(u.Account), name, u.Permissions)
		return true
	}
	if a.user != "" && name == a.user && (!check || comparePasswords(a.password, pass)) {
		s.bindClient(c, s.globalAccount(), name, nil)
		return true
	}
	return false
}

func (s *Server) authNkey(c *client, a *authConfig, co *connectOpts) bool {
	nu, ok := a.nkeys[co.Nkey]
	if !ok || c.nonce == "" {
		return false
	}
	sig, err := base64.RawURLEncoding.DecodeString(co.Sig)
	if err != nil {
		if sig, err = base64.StdEncoding.DecodeString(co.Sig); err != nil {
			return false
		}
	}
	pub, err := nkeys.FromPublicKey(co.Nkey)
	if err != nil || pub.Verify([]byte(c.nonce), sig) != nil {
		return false
	}
	s.bindClient(c, s.accountOf(nu.Account), co.Nkey, nu.Permissions)
	return true
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
