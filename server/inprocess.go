package server

import (
	"errors"
	"net"
)

// InProcessConn returns a client connection to s that goes through a pipe
// in memory, not a socket (nats.go's nats.InProcessServer option uses it).
// The server treats it as any client: INFO, CONNECT, auth and limits apply.
func (s *Server) InProcessConn() (net.Conn, error) {
	if !s.Running() || s.shutdown.Load() {
		return nil, errors.New("server not running")
	}
	local, remote := net.Pipe()
	s.createClientConn(local, true)
	return remote, nil
}
