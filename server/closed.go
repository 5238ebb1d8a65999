package server

import (
	"github.com/nats-io/nats-server/v2/internal/lockorder"
)

// ClosedState is why a connection closed, named as nats-server names it.
type ClosedState int

const (
	ClientClosed ClosedState = iota + 1
	AuthenticationTimeout
	AuthenticationViolation
	TLSHandshakeError
	SlowConsumerPendingBytes
	SlowConsumerWriteDeadline
	WriteError
	ReadError
	ParseError
	StaleConnection
	ProtocolViolation
	BadClientProtocolVersion
	WrongPort
	MaxAccountConnectionsExceeded
	MaxConnectionsExceeded
	MaxPayloadExceeded
	MaxControlLineExceeded
	MaxSubscriptionsExceeded
	DuplicateRoute
	RouteRemoved
	ServerShutdown
	AuthenticationExpired
	WrongGateway
	MissingAccount
	Revocation
	InternalClient
	MsgHeaderViolation
	NoRespondersRequiresHeaders
	ClusterNameConflict
	DuplicateRemoteLeafnodeConnection
	DuplicateClientID
	DuplicateServerName
	MinimumVersionRequired
	ClusterNamesIdentical
	Kicked
)

var closedStateNames = map[ClosedState]string{
	ClientClosed: "Client Closed", AuthenticationTimeout: "Authentication Timeout",
	AuthenticationViolation: "Authentication Failure", TLSHandshakeError: "TLS Handshake Failure",
	SlowConsumerPendingBytes: "Slow Consumer (Pending Bytes)", SlowConsumerWriteDeadline: "Slow Consumer (Write Deadline)",
	WriteError: "Write Error", ReadError: "Read Error", ParseError: "Parse Error",
	StaleConnection: "Stale Connection", ProtocolViolation: "Protocol Violation",
	BadClientProtocolVersion: "Bad Client Protocol Version", WrongPort: "Incorrect Port",
	MaxConnectionsExceeded: "Maximum Connections Exceeded", MaxPayloadExceeded: "Maximum Message Payload Exceeded",
	MaxControlLineExceeded: "Maximum Control Line Exceeded", MaxSubscriptionsExceeded: "Maximum Subscriptions Exceeded",
	ServerShutdown: "Server Shutdown", AuthenticationExpired: "Authentication Expired",
	RouteRemoved: "Route Removed", DuplicateRoute: "Duplicate Route", Kicked: "Kicked",
}

func (cs ClosedState) String() string {
	if n, ok := closedStateNames[cs]; ok {
		return n
	}
	return "Unknown State"
}

// closedRing keeps the last N closed connections for /connz?state=closed.
type closedRing struct {
	mu    lockorder.Mutex[lockorder.ClosedRing]
	items []*ConnInfo
	next  int
	full  bool
}

func newClosedRing(n int) *closedRing {
	if n <= 0 {
		n = 1
	}
	return &closedRing{items: make([]*ConnInfo, n)}
}

func (r *closedRing) add(ci *ConnInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.items[r.next] = ci
	r.next = (r.next + 1) % len(r.items)
	if r.next == 0 {
		r.full = true
	}
}

func (r *closedRing) list() []*ConnInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*ConnInfo
	if r.full {
		out = append(out, r.items[r.next:]...)
	}
	return append(out, r.items[:r.next]...)
}
