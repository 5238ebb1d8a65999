package server

import (
	"fmt"
	"github.com/nats-io/jwt/v2"
	"strings"
)

// knownConnTypes are the names allowed_connection_types may use (jwt's).
// Tern accepts clients over TCP (STANDARD) and in-process pipes
// (IN_PROCESS); a user allowed only other types cannot connect at all.
var knownConnTypes = map[string]bool{
	jwt.ConnectionTypeStandard: true, jwt.ConnectionTypeWebsocket: true,
	jwt.ConnectionTypeLeafnode: true, jwt.ConnectionTypeLeafnodeWS: true,
	jwt.ConnectionTypeMqtt: true, jwt.ConnectionTypeMqttWS: true,
	jwt.ConnectionTypeInProcess: true,
}

// connType is the kind of connection c arrived on.
func (c *client) connType() string {
	if c.nc != nil && c.nc.LocalAddr() != nil && c.nc.LocalAddr().Network() == "pipe" {
		return jwt.ConnectionTypeInProcess
	}
	return jwt.ConnectionTypeStandard
}

func connTypeAllowed(allowed map[string]struct{}, t string) bool {
	if len(allowed) == 0 {
		return true
	}
	_, ok := allowed[t]
	return ok
}

// parseConnTypes reads allowed_connection_types: a list of known names.
func parseConnTypes(ce *configErrors, tk any) map[string]struct{} {
	out := map[string]struct{}{}
	for _, t := range asStrings(ce, tk) {
		t = strings.ToUpper(t)
		if !knownConnTypes[t] {
			ce.errf(tk, "unknown connection type %q", t)
			continue
		}
		out[t] = struct{}{}
	}
	return out
}

// validateConnTypes checks the connection types set through Options.
func validateConnTypes(o *Options) error {
	// Names are upper-cased in place, as nats-server does.
	check := func(m map[string]struct{}) error {
		for t := range m {
			up := strings.ToUpper(t)
			if !knownConnTypes[up] {
				return fmt.Errorf("unknown connection type %q", t)
			}
			if up != t {
				delete(m, t)
				m[up] = struct{}{}
			}
		}
		return nil
	}
	for _, u := range o.Users {
		if err := check(u.AllowedConnectionTypes); err != nil {
			return err
		}
	}
	for _, n := range o.Nkeys {
		if err := check(n.AllowedConnectionTypes); err != nil {
			return err
		}
	}
	return nil
}
