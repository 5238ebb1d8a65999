package server

import (
	"errors"
	"fmt"
	"reflect"
	"time"
)

// Reload re-reads the config file and applies what can change at run time:
// logging, authorization (users, tokens, permissions) and limits. Options
// set on the command line keep their command-line values.
func (s *Server) Reload() error {
	cur := s.getOpts()
	if cur.ConfigFile == "" {
		return errors.New("can only reload config when a file is provided using -c or --config")
	}
	nw, err := ProcessConfigFile(cur.ConfigFile)
	if err != nil {
		return fmt.Errorf("config reload failed: %v", err)
	}
	if cur.inFlags != nil {
		mergeFlags(nw, cur, cur.inFlags)
		if err := applyTLSFlags(nw, cur.inFlags); err != nil {
			return fmt.Errorf("config reload failed: %v", err)
		}
	}
	return s.ReloadOptions(nw)
}

// ReloadOptions applies new options as Reload does.
func (s *Server) ReloadOptions(newOpts *Options) error {
	cur := s.getOpts()
	nw := newOpts.Clone()
	// NoLog and NoSigs are not config file options: keep the running
	// server's, or a reload would turn logging back on. Nor is the route
	// protocol a test makes a server speak (routeProto): peers were told
	// it, and raftQuiesces follows it.
	nw.NoLog, nw.NoSigs, nw.routeProto = cur.NoLog, cur.NoSigs, cur.routeProto
	setBaselineOptions(nw)
	if err := validateOptions(nw); err != nil {
		return err
	}
	if systemJetStream(nw) {
		return errors.New(sysJetStreamRefusal)
	}
	if err := checkReloadable(cur, nw); err != nil {
		return err
	}
	if err := s.addReloadedAccounts(nw); err != nil {
		return err
	}
	// Accounts already registered stay as they are (users resolve to them
	// by name), accounts the reload added join them. An account the reload
	// removed stays registered with its streams, as in nats-server, but no
	// user maps to it any more: reauthorizeClients disconnects its clients.
	nw.Accounts = s.registeredAccounts(nw.Accounts)
	nw.inFlags = cur.inFlags
	s.opts.Store(nw)
	s.maxPending.Store(nw.MaxPending)
	s.reloadOpenFiles(nw)
	s.auth.Store(buildAuth(nw))
	s.reauthorizeClients()
	s.ConfigureLogger()
	s.configTime.Store(time.Now().UnixNano())
	s.Noticef("Reloaded server configuration")
	return nil
}

// checkReloadable refuses changes that need a restart.
func checkReloadable(cur, nw *Options) error {
	switch {
	case cur.Host != nw.Host || cur.Port != nw.Port:
		return errors.New("config reload not supported for listen address")
	case cur.ServerName != nw.ServerName:
		return errors.New("config reload not supported for server_name")
	case cur.JetStream != nw.JetStream || cur.StoreDir != nw.StoreDir:
		return errors.New("config reload not supported for jetstream")
	case !reflect.DeepEqual(clusterWithoutTLS(cur.Cluster), clusterWithoutTLS(nw.Cluster)):
		return errors.New("config reload not supported for cluster")
	}
	return nil
}

// registeredAccounts maps configured accounts to the registered ones.
func (s *Server) registeredAccounts(accs []*Account) []*Account {
	out := make([]*Account, 0, len(accs))
	for _, acc := range accs {
		out = append(out, s.accountOf(acc))
	}
	return out
}

// addReloadedAccounts registers the accounts of nw that the server does not
// have yet, wires their imports and enables JetStream for those that ask.
func (s *Server) addReloadedAccounts(nw *Options) error {
	var added []*Account
	for _, acc := range nw.Accounts {
		if s.accs.lookup(acc.Name) == nil {
			added = append(added, acc)
		}
	}
	if err := s.registerAccounts(added); err != nil {
		return err
	}
	js := s.js.Load()
	for _, acc := range added {
		s.Noticef("Reload: added account %q", acc.Name)
		if js == nil || !acc.jetstream {
			continue
		}
		if err := js.enableAccount(acc); err != nil {
			return err
		}
	}
	return nil
}
