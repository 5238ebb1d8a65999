package server

import (
	"errors"
	"fmt"
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
	}
	return s.ReloadOptions(nw)
}

// ReloadOptions applies new options as Reload does.
func (s *Server) ReloadOptions(newOpts *Options) error {
	cur := s.getOpts()
	nw := newOpts.Clone()
	// NoLog and NoSigs are not config file options: keep the running
	// server's, or a reload would turn logging back on.
	nw.NoLog, nw.NoSigs = cur.NoLog, cur.NoSigs
	setBaselineOptions(nw)
	if err := validateOptions(nw); err != nil {
		return err
	}
	if err := checkReloadable(cur, nw); err != nil {
		return err
	}
	// Accounts are fixed at start; users keep pointing at registered ones.
	nw.Accounts = cur.Accounts
	nw.inFlags = cur.inFlags
	s.opts.Store(nw)
	s.maxPending.Store(nw.MaxPending)
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
	case cur.Cluster != nw.Cluster:
		return errors.New("config reload not supported for cluster")
	case !sameAccountNames(cur.Accounts, nw.Accounts):
		// Accounts are registered at start only; users of an added account
		// would otherwise be bound to the global account.
		return errors.New("config reload not supported for adding or removing accounts")
	}
	return nil
}

func sameAccountNames(a, b []*Account) bool {
	if len(a) != len(b) {
		return false
	}
	names := make(map[string]bool, len(a))
	for _, acc := range a {
		names[acc.Name] = true
	}
	for _, acc := range b {
		if !names[acc.Name] {
			return false
		}
	}
	return true
}
