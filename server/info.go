package server

import (
	"encoding/json"
	"runtime"
)

// Info is the INFO the server sends to clients.
type Info struct {
	ID                string   `json:"server_id"`
	Name              string   `json:"server_name"`
	Version           string   `json:"version"`
	Proto             int      `json:"proto"`
	GitCommit         string   `json:"git_commit,omitempty"`
	GoVersion         string   `json:"go"`
	Host              string   `json:"host"`
	Port              int      `json:"port"`
	Headers           bool     `json:"headers"`
	AuthRequired      bool     `json:"auth_required,omitempty"`
	TLSRequired       bool     `json:"tls_required,omitempty"`
	TLSVerify         bool     `json:"tls_verify,omitempty"`
	TLSAvailable      bool     `json:"tls_available,omitempty"`
	MaxPayload        int32    `json:"max_payload"`
	JetStream         bool     `json:"jetstream,omitempty"`
	ClientID          uint64   `json:"client_id,omitempty"`
	ClientIP          string   `json:"client_ip,omitempty"`
	Nonce             string   `json:"nonce,omitempty"`
	Cluster           string   `json:"cluster,omitempty"`
	Domain            string   `json:"domain,omitempty"`
	ClientConnectURLs []string `json:"connect_urls,omitempty"`
	LameDuckMode      bool     `json:"ldm,omitempty"`
}

// baseInfo builds the server-wide part of INFO.
func (s *Server) baseInfo() Info {
	o := s.getOpts()
	host, port := o.Host, s.clientPort()
	return Info{
		ID: s.id, Name: s.name, Version: VERSION, Proto: PROTO, GoVersion: runtime.Version(),
		Host: host, Port: port, Headers: !o.NoHeaderSupport, MaxPayload: o.MaxPayload,
		JetStream: s.jetStreamReady(), AuthRequired: s.getAuth().required, Cluster: o.Cluster.Name,
		Domain: o.JetStreamDomain, ClientConnectURLs: s.connectURLs(),
	}
}

// infoFor renders the INFO line for one client.
func (s *Server) infoFor(c *client) []byte {
	info := s.baseInfo()
	info.ClientID, info.ClientIP, info.Nonce = c.cid, c.host, c.nonce
	info.LameDuckMode = s.ldm.Load()
	s.setInfoTLS(&info, c)
	b, _ := json.Marshal(&info)
	return append(append([]byte("INFO "), b...), "\r\n"...)
}
