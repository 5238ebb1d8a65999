// Package test has helpers for running Tern servers in tests, under the
// names nats-server's test package uses, so embedders' tests can switch.
package test

import (
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// DefaultTestOptions are options for a test server on 127.0.0.1:4222
// without logging or signal handling.
var DefaultTestOptions = server.Options{
	Host:           "127.0.0.1",
	Port:           4222,
	NoLog:          true,
	NoSigs:         true,
	MaxControlLine: 4096,

	DisableShortFirstPing: true,
}

// RunDefaultServer starts a server with DefaultTestOptions.
func RunDefaultServer() *server.Server {
	opts := DefaultTestOptions
	return RunServer(&opts)
}

// RunRandClientPortServer starts a default server on a random client port.
func RunRandClientPortServer() *server.Server {
	opts := DefaultTestOptions
	opts.Port = server.RANDOM_PORT
	return RunServer(&opts)
}

// RunServer starts a server with opts (DefaultTestOptions when nil) and
// panics if it is not ready within 10 seconds.
func RunServer(opts *server.Options) *server.Server {
	return RunServerCallback(opts, nil)
}

// RunServerCallback is RunServer with callback called on the server after
// it is created and before it starts.
func RunServerCallback(opts *server.Options, callback func(*server.Server)) *server.Server {
	if opts == nil {
		o := DefaultTestOptions
		opts = &o
	}
	s, err := server.NewServer(opts)
	if err != nil || s == nil {
		panic(fmt.Sprintf("No NATS Server object returned: %v", err))
	}
	if !opts.NoLog {
		s.ConfigureLogger()
	}
	if callback != nil {
		callback(s)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		panic("Unable to start NATS Server in Go Routine")
	}
	return s
}

// RunServerWithConfig starts a server from a config file.
func RunServerWithConfig(configFile string) (*server.Server, *server.Options) {
	return RunServerWithConfigOverrides(configFile, nil, nil)
}

// RunServerWithConfigOverrides starts a server from a config file, with
// optsCallback changing the options read from it and svrCallback called on
// the server before it starts (either may be nil).
func RunServerWithConfigOverrides(configFile string, optsCallback func(*server.Options), svrCallback func(*server.Server)) (*server.Server, *server.Options) {
	opts := LoadConfig(configFile)
	opts.NoSigs, opts.NoLog = true, true
	if optsCallback != nil {
		optsCallback(opts)
	}
	return RunServerCallback(opts, svrCallback), opts
}

// LoadConfig parses a config file into options.
func LoadConfig(configFile string) *server.Options {
	opts, err := server.ProcessConfigFile(configFile)
	if err != nil {
		panic(fmt.Sprintf("Error processing configuration file: %v", err))
	}
	return opts
}
