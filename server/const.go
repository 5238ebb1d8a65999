package server

import "time"

const (
	// VERSION is the nats-server release whose client-visible behaviour Tern
	// implements; clients use it to pick their protocol paths.
	VERSION = "2.10.24"
	// TernVersion is Tern's own version, reported alongside VERSION.
	TernVersion = "0.1.0"

	// PROTO is the client protocol version.
	PROTO = 1

	DEFAULT_PORT      = 4222
	DEFAULT_HOST      = "0.0.0.0"
	RANDOM_PORT       = -1
	DEFAULT_HTTP_PORT = 8222

	MAX_PAYLOAD_SIZE        = 1024 * 1024
	MAX_CONTROL_LINE_SIZE   = 4096
	MAX_PENDING_SIZE        = 64 * 1024 * 1024
	DEFAULT_MAX_CONNECTIONS = 64 * 1024

	DEFAULT_PING_INTERVAL          = 2 * time.Minute
	DEFAULT_PING_MAX_OUT           = 2
	AUTH_TIMEOUT                   = 2 * time.Second
	DEFAULT_FLUSH_DEADLINE         = 10 * time.Second
	DEFAULT_LAME_DUCK_DURATION     = 2 * time.Minute
	DEFAULT_LAME_DUCK_GRACE_PERIOD = 10 * time.Second
	DEFAULT_MAX_CLOSED_CLIENTS     = 10000

	// Global account name, as nats-server.
	globalAccountName = "$G"
	// Default system account name.
	DEFAULT_SYSTEM_ACCOUNT = "$SYS"
)
