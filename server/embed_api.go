package server

import "errors"

// This file holds the methods embedding programs call that have no other
// home, under nats-server's names and with its meaning.

// GlobalAccount returns the global account ($G), where clients of a server
// without accounts live.
func (s *Server) GlobalAccount() *Account { return s.gacc }

// NumSubscriptions counts the subscriptions of every account.
func (s *Server) NumSubscriptions() uint32 { return s.numSubs() }

// StoreDir returns the JetStream directory (the "jetstream" directory inside
// the configured store directory), "" when JetStream is off.
func (s *Server) StoreDir() string {
	if js := s.js.Load(); js != nil {
		return js.storeDir
	}
	return ""
}

// JetStreamConfig returns a copy of the running JetStream configuration,
// nil when JetStream is off.
func (s *Server) JetStreamConfig() *JetStreamConfig {
	js := s.js.Load()
	if js == nil {
		return nil
	}
	c := js.jsConfig()
	return &c
}

// VarzOptions are the options of Varz (nats-server has none either).
type VarzOptions struct{}

// Varz returns what /varz shows.
func (s *Server) Varz(*VarzOptions) (*Varz, error) { return s.varz(), nil }

// Connz returns what /connz shows for the same options (nil: defaults).
func (s *Server) Connz(opts *ConnzOptions) (*Connz, error) {
	if opts == nil {
		opts = &ConnzOptions{}
	}
	if opts.Sort != "" {
		if _, ok := connSorts[string(opts.Sort)]; !ok {
			return nil, errors.New("invalid sorting option: " + string(opts.Sort))
		}
	}
	return s.connz(opts), nil
}

// JSzOptions are the options of Jsz. Tern reports the server-wide figures;
// the per-account, per-stream and raft details are not implemented yet, and
// asking for them is an error rather than a silently shorter answer.
type JSzOptions struct {
	Account          string `json:"account,omitempty"`
	Accounts         bool   `json:"accounts,omitempty"`
	Streams          bool   `json:"streams,omitempty"`
	Consumer         bool   `json:"consumer,omitempty"`
	Config           bool   `json:"config,omitempty"`
	LeaderOnly       bool   `json:"leader_only,omitempty"`
	Offset           int    `json:"offset,omitempty"`
	Limit            int    `json:"limit,omitempty"`
	RaftGroups       bool   `json:"raft,omitempty"`
	StreamLeaderOnly bool   `json:"stream_leader_only,omitempty"`
}

// Jsz returns what /jsz shows.
func (s *Server) Jsz(opts *JSzOptions) (*JSInfo, error) {
	if opts != nil && (opts.Account != "" || opts.Accounts || opts.Streams || opts.Consumer ||
		opts.Config || opts.RaftGroups || opts.LeaderOnly || opts.StreamLeaderOnly) {
		return nil, errors.New("jsz account, stream, consumer and raft details are not supported by Tern yet")
	}
	return s.jsz(), nil
}

// errJSToggling refuses an enable or disable while another one runs.
var errJSToggling = errors.New("a JetStream enable or disable is already in progress")

// EnableJetStream turns JetStream on in a running single server. A nil
// config (or zero fields) keeps the server's options; config.StoreDir is
// the directory in which the "jetstream" directory is made, as in
// nats-server. Starting JetStream at run time on a clustered server is not
// supported yet (it must be configured at start).
func (s *Server) EnableJetStream(config *JetStreamConfig) error {
	if !s.jsToggling.CompareAndSwap(false, true) {
		return errJSToggling
	}
	defer s.jsToggling.Store(false)
	if s.js.Load() != nil {
		return errors.New("jetstream already enabled")
	}
	if !s.Running() {
		return errors.New("server not running")
	}
	o := s.getOpts().Clone()
	if o.Cluster.Port != 0 && len(o.Routes) > 0 {
		return errors.New("enabling JetStream at run time on a clustered server is not supported by Tern yet")
	}
	o.JetStream = true
	if config != nil {
		applyJetStreamConfig(o, config)
	}
	if systemJetStream(o) { // opts_validate.go: refused before anything is made
		return errSystemJetStream
	}
	// Only the store directory: the rest was set at NewServer, and a second
	// pass would turn a random port's 0 into 4222.
	setStoreDirDefault(o)
	s.opts.Store(o)
	if err := s.enableJetStream(); err != nil {
		return err
	}
	s.Noticef("JetStream enabled at run time")
	return nil
}

func applyJetStreamConfig(o *Options, c *JetStreamConfig) {
	if c.StoreDir != "" {
		o.StoreDir = c.StoreDir
	}
	if c.MaxMemory > 0 {
		o.JetStreamMaxMemory = c.MaxMemory
	}
	if c.MaxStore > 0 {
		o.JetStreamMaxStore = c.MaxStore
	}
	if c.Domain != "" {
		o.JetStreamDomain = c.Domain
	}
	if c.SyncInterval > 0 {
		o.SyncInterval = c.SyncInterval
	}
	o.SyncAlways = o.SyncAlways || c.SyncAlways
}

// DisableJetStream stops JetStream on a single server: its streams stop
// (their data stays on disk) and the JetStream API stops answering. On a
// clustered server it is not supported yet: nats-server also removes the
// server from the meta group there, which Tern does not do.
func (s *Server) DisableJetStream() error {
	if !s.jsToggling.CompareAndSwap(false, true) {
		return errJSToggling
	}
	defer s.jsToggling.Store(false)
	js := s.js.Load()
	if js == nil {
		return nil
	}
	if js.cluster != nil {
		return errors.New("disabling JetStream on a clustered server is not supported by Tern yet")
	}
	js.shutdown()
	s.js.Store(nil)
	o := s.getOpts().Clone()
	o.JetStream = false
	s.opts.Store(o)
	s.Noticef("JetStream disabled")
	return nil
}
