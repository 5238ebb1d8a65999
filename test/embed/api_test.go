package main

import (
	"crypto/tls"
	"flag"
	"net"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// The embedding API with nats-server v2.15.2's signatures: this file does
// not compile when one of them is missing or differs.
var (
	_ func(*server.Options) (*server.Server, error)                                  = server.NewServer
	_ func(string) (*server.Options, error)                                          = server.ProcessConfigFile
	_ func(*server.Options, string) error                                            = (*server.Options).ProcessConfigFile
	_ func(*flag.FlagSet, []string, func(), func(), func()) (*server.Options, error) = server.ConfigureOptions
	_ func(string)                                                                   = server.PrintAndDie
	_ func()                                                                         = server.PrintServerAndExit
	_ func(*server.Server) error                                                     = server.Run
	_ func(string) *server.Account                                                   = server.NewAccount
	_                                                                                = server.RANDOM_PORT

	_ func(*server.Server)                                              = (*server.Server).Start
	_ func(*server.Server)                                              = (*server.Server).Shutdown
	_ func(*server.Server)                                              = (*server.Server).WaitForShutdown
	_ func(*server.Server, time.Duration) bool                          = (*server.Server).ReadyForConnections
	_ func(*server.Server) bool                                         = (*server.Server).Running
	_ func(*server.Server) string                                       = (*server.Server).ClientURL
	_ func(*server.Server) net.Addr                                     = (*server.Server).Addr
	_ func(*server.Server) *net.TCPAddr                                 = (*server.Server).MonitorAddr
	_ func(*server.Server) *net.TCPAddr                                 = (*server.Server).ClusterAddr
	_ func(*server.Server) string                                       = (*server.Server).Name
	_ func(*server.Server) string                                       = (*server.Server).ID
	_ func(*server.Server) string                                       = (*server.Server).ClusterName
	_ func(*server.Server) bool                                         = (*server.Server).JetStreamEnabled
	_ func(*server.Server) *server.JetStreamConfig                      = (*server.Server).JetStreamConfig
	_ func(*server.Server) string                                       = (*server.Server).StoreDir
	_ func(*server.Server) int                                          = (*server.Server).NumClients
	_ func(*server.Server) int                                          = (*server.Server).NumRoutes
	_ func(*server.Server) uint32                                       = (*server.Server).NumSubscriptions
	_ func(*server.Server) error                                        = (*server.Server).Reload
	_ func(*server.Server, *server.Options) error                       = (*server.Server).ReloadOptions
	_ func(*server.Server)                                              = (*server.Server).ConfigureLogger
	_ func(*server.Server, server.Logger, bool, bool)                   = (*server.Server).SetLogger
	_ func(*server.Server, server.Logger, bool, bool, bool)             = (*server.Server).SetLoggerV2
	_ func(*server.Server, *server.VarzOptions) (*server.Varz, error)   = (*server.Server).Varz
	_ func(*server.Server, *server.ConnzOptions) (*server.Connz, error) = (*server.Server).Connz
	_ func(*server.Server, *server.JSzOptions) (*server.JSInfo, error)  = (*server.Server).Jsz
	_ func(*server.Server, *server.JetStreamConfig) error               = (*server.Server).EnableJetStream
	_ func(*server.Server) error                                        = (*server.Server).DisableJetStream
	_ func(*server.Server)                                              = (*server.Server).LameDuckShutdown
	_ func(*server.Server, string) (*server.Account, error)             = (*server.Server).LookupAccount
	_ func(*server.Server) *server.Account                              = (*server.Server).GlobalAccount
	_ func(*server.Server) *server.Account                              = (*server.Server).SystemAccount
	_ func(*server.Server) (net.Conn, error)                            = (*server.Server).InProcessConn

	_ func(*server.TLSConfigOpts) (*tls.Config, error) = server.GenTLSConfig
	_                                                  = server.ErrCertNotPinned
	_ time.Duration                                    = server.TLS_TIMEOUT
	_ time.Duration                                    = server.DEFAULT_TLS_HANDSHAKE_FIRST_FALLBACK_DELAY
	_                                                  = server.TLSConfigOpts{
		CertFile: "c", KeyFile: "k", CaFile: "ca", Verify: true, Insecure: false, Map: true,
		TLSCheckKnownURLs: false, HandshakeFirst: true, FallbackDelay: time.Millisecond, Timeout: 2,
		RateLimit: 0, AllowInsecureCiphers: false, Ciphers: []uint16{tls.TLS_AES_128_GCM_SHA256},
		CurvePreferences: []tls.CurveID{tls.X25519}, PinnedCerts: server.PinnedCertSet{},
		Certificates: []*server.TLSCertPairOpt{{CertFile: "c", KeyFile: "k"}}, MinVersion: tls.VersionTLS12,
	}
)
