package server

import (
	"errors"
	"net"
	"time"
)

// More of nats-server's embedding methods, for what Tern has; features it
// lacks (leafnodes, gateways, websocket) report none of them.

// ErrAccountExists is returned by RegisterAccount for a name in use.
var ErrAccountExists = errors.New("account exists")

// String is the server's name.
func (s *Server) String() string { return s.name }

// ConfigTime is when the configuration was last loaded.
func (s *Server) ConfigTime() time.Time { return time.Unix(0, s.configTime.Load()) }

// NumSlowConsumers counts the clients closed or stalled as slow consumers.
func (s *Server) NumSlowConsumers() int64 { return s.stats.slowConsumers.Load() }

// NumStaleConnections counts the connections closed for missing pongs.
func (s *Server) NumStaleConnections() int64 { return s.stats.staleConnections.Load() }

// NumActiveAccounts counts the accounts with at least one client.
func (s *Server) NumActiveAccounts() int32 { return int32(s.activeAccounts()) }

// NumLoadedAccounts counts the registered accounts.
func (s *Server) NumLoadedAccounts() int { return len(s.accs.all()) }

// NumRemotes counts the route connections, as NumRoutes does.
func (s *Server) NumRemotes() int { return s.NumRoutes() }

// NumLeafNodes is 0: Tern has no leafnodes (setting them up is refused).
func (s *Server) NumLeafNodes() int { return 0 }

// NumOutboundGateways is 0: Tern has no gateways (setting them up is refused).
func (s *Server) NumOutboundGateways() int { return 0 }

// GatewayAddr is nil: Tern has no gateway listener.
func (s *Server) GatewayAddr() *net.TCPAddr { return nil }

// WebsocketURL is "": Tern has no websocket listener.
func (s *Server) WebsocketURL() string { return "" }

// JetStreamIsClustered reports whether JetStream runs with a meta group.
func (s *Server) JetStreamIsClustered() bool {
	js := s.js.Load()
	return js != nil && js.cluster != nil
}

// JetStreamIsLeader reports whether this server leads the meta group.
func (s *Server) JetStreamIsLeader() bool {
	js := s.js.Load()
	return js != nil && js.cluster != nil && js.cluster.metaLeaderName() == s.name
}

// JetStreamNumAccounts counts the accounts with JetStream enabled.
func (s *Server) JetStreamNumAccounts() int {
	if js := s.js.Load(); js != nil {
		return len(js.accountList())
	}
	return 0
}

// ShutdownJetStream stops JetStream as DisableJetStream does (Tern keeps
// no meta state that one would delete and the other keep).
func (s *Server) ShutdownJetStream() error { return s.DisableJetStream() }

// RegisterAccount registers a new, empty account.
func (s *Server) RegisterAccount(name string) (*Account, error) {
	acc, isNew := s.LookupOrRegisterAccount(name)
	if !isNew {
		return nil, ErrAccountExists
	}
	return acc, nil
}

// LookupOrRegisterAccount returns the account of that name, registering a
// new, empty one if there is none.
func (s *Server) LookupOrRegisterAccount(name string) (*Account, bool) {
	acc := NewAccount(name)
	acc.srv = s
	reg := s.accs.register(acc)
	return reg, reg == acc
}

// SubszOptions are the options of Subsz.
type SubszOptions struct {
	Offset        int    `json:"offset"`
	Limit         int    `json:"limit"`
	Subscriptions bool   `json:"subscriptions"`
	Account       string `json:"account,omitempty"`
	Test          string `json:"test,omitempty"`
}

// Subsz returns what /subsz shows. Paging and the account filter are not
// implemented yet and are refused.
func (s *Server) Subsz(opts *SubszOptions) (*Subsz, error) {
	if opts == nil {
		opts = &SubszOptions{}
	}
	if opts.Offset != 0 || opts.Limit != 0 || opts.Account != "" {
		return nil, errors.New("subsz offset, limit and account are not supported by Tern yet")
	}
	return s.subsz(opts.Subscriptions, opts.Test), nil
}

// RoutezOptions are the options of Routez.
type RoutezOptions struct {
	Subscriptions       bool `json:"subscriptions"`
	SubscriptionsDetail bool `json:"subscriptions_detail"`
}

// Routez returns what /routez shows. A route's subscriptions are not
// reported yet, and asking for them is refused.
func (s *Server) Routez(opts *RoutezOptions) (*Routez, error) {
	if opts != nil && (opts.Subscriptions || opts.SubscriptionsDetail) {
		return nil, errors.New("routez subscriptions are not supported by Tern yet")
	}
	return s.routez(), nil
}

// AccountzOptions are the options of Accountz.
type AccountzOptions struct {
	Account string `json:"account"`
}

// Accountz returns what /accountz shows. One account's details are not
// reported yet, and asking for them is refused.
func (s *Server) Accountz(opts *AccountzOptions) (*Accountz, error) {
	if opts != nil && opts.Account != "" {
		return nil, errors.New("accountz details of one account are not supported by Tern yet")
	}
	return s.accountz(), nil
}
