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
	}
	return nil
}
