package server

import "fmt"

// addConfigUsers adds the users and nkeys of one users array (of the
// authorization block or of an account) to o. A user name or nkey that is
// already configured, here or in another account, is an error, as in
// nats-server: otherwise which account it logs in to would depend on the
// order the accounts were read in.
func (o *Options) addConfigUsers(ce *configErrors, tk any, users []*User, nkeys []*NkeyUser) {
	seen := make(map[string]struct{}, len(o.Users)+len(o.Nkeys))
	for _, u := range o.Users {
		seen[u.Username] = struct{}{}
	}
	for _, n := range o.Nkeys {
		seen[n.Nkey] = struct{}{}
	}
	for _, n := range nkeys {
		if _, dup := seen[n.Nkey]; dup {
			ce.errf(tk, "Duplicate nkey %q detected", n.Nkey)
			continue
		}
		seen[n.Nkey] = struct{}{}
		o.Nkeys = append(o.Nkeys, n)
	}
	for _, u := range users {
		if _, dup := seen[u.Username]; dup {
			ce.errf(tk, "Duplicate user %q detected", u.Username)
			continue
		}
		seen[u.Username] = struct{}{}
		o.Users = append(o.Users, u)
	}
}

// checkDuplicateUsers refuses options (set by an embedder) that name a user
// or an nkey twice.
func checkDuplicateUsers(o *Options) error {
	seen := make(map[string]struct{}, len(o.Users)+len(o.Nkeys))
	for _, n := range o.Nkeys {
		if _, dup := seen[n.Nkey]; dup {
			return fmt.Errorf("duplicate nkey %q detected", n.Nkey)
		}
		seen[n.Nkey] = struct{}{}
	}
	for _, u := range o.Users {
		if _, dup := seen[u.Username]; dup {
			return fmt.Errorf("duplicate user %q detected", u.Username)
		}
		seen[u.Username] = struct{}{}
	}
	return nil
}
