package server

// TLS handshakes: a client's (the server side, after INFO or, with
// handshake_first, before it) and a route's (right after dial or accept,
// before the route protocol's own INFO exchange).

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"io"
	"log"
	"net"
	"net/url"
	"strings"
	"time"
)

// ErrCertNotPinned is the handshake error for a peer whose certificate's
// public key is not in pinned_certs.
var ErrCertNotPinned = errors.New("certificate not pinned")

const tlsRequiredErr = "-ERR 'Secure Connection - TLS Required'\r\n"

// setInfoTLS fills INFO's TLS fields for c.
func (s *Server) setInfoTLS(info *Info, c *client) {
	o := s.getOpts()
	if o.TLSConfig == nil {
		return
	}
	info.TLSRequired = !o.AllowNonTLS || c.tlsFirst
	info.TLSVerify = o.TLSConfig.ClientAuth == tls.RequireAndVerifyClientCert
	if c.inProc {
		info.TLSRequired = false // an in-process pipe is never encrypted
	}
	info.TLSAvailable = !info.TLSRequired
}

// tlsAcceptClient runs the server side of a client's handshake: INFO in
// clear first, or, with handshake_first, the handshake first (after the
// fallback delay, if set, with no bytes from the client, INFO goes first
// after all). On success c.nc is the TLS connection and the INFO still to
// queue is returned (nil when it went out in clear). On failure the
// connection is closed: a client that spoke plain text or nothing at all
// gets "-ERR 'Secure Connection - TLS Required'" in clear.
func (s *Server) tlsAcceptClient(c *client, o *Options) ([]byte, bool) {
	raw := c.nc
	timeout := tlsTimeout(o.TLSTimeout)
	first := o.TLSHandshakeFirst
	var pre []byte
	if first && o.TLSHandshakeFirstFallback > 0 {
		pre = peekBytes(raw, 4, o.TLSHandshakeFirstFallback)
		first = len(pre) > 0
	}
	c.tlsFirst = first
	info := s.infoFor(c)
	if !first {
		_ = raw.SetWriteDeadline(time.Now().Add(timeout))
		if _, err := raw.Write(info); err != nil {
			s.tlsClientFailed(c, raw, err, false)
			return nil, false
		}
		_ = raw.SetWriteDeadline(time.Time{})
		info = nil
		if o.AllowNonTLS {
			// TLS or not, as the client's first byte says (a TLS record
			// starts with 0x16); a client that says nothing is plain.
			pre = peekBytes(raw, 6, timeout)
			if len(pre) == 0 || pre[0] != 0x16 {
				c.nc = &prefixConn{Conn: raw, pre: pre}
				return nil, true
			}
		}
	}
	conn := raw
	if len(pre) > 0 {
		conn = &prefixConn{Conn: raw, pre: pre}
	}
	tc := tls.Server(conn, o.TLSConfig)
	if err := s.handshake(tc, raw, timeout, o.TLSPinnedCerts); err != nil {
		s.tlsClientFailed(c, raw, err, true)
		return nil, false
	}
	cs := tc.ConnectionState()
	s.Debugf("%s - TLS handshake complete: TLS %s, %s", c, tlsVersionName(cs.Version), tls.CipherSuiteName(cs.CipherSuite))
	c.nc = tc
	return info, true
}

// handshake runs tc's handshake within timeout (a deadline on nc, so a
// client that timed out can still be told why) and checks the peer against
// pinned. Shutdown abandons it.
func (s *Server) handshake(tc *tls.Conn, nc net.Conn, timeout time.Duration, pinned PinnedCertSet) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	_ = nc.SetDeadline(time.Now().Add(timeout))
	if err := tc.HandshakeContext(ctx); err != nil {
		return err
	}
	_ = nc.SetDeadline(time.Time{})
	return checkPinned(tc.ConnectionState(), pinned)
}

// checkPinned accepts the peer when pinned is empty or lists the SHA-256
// of its certificate's SubjectPublicKeyInfo.
func checkPinned(cs tls.ConnectionState, pinned PinnedCertSet) error {
	if len(pinned) == 0 {
		return nil
	}
	if len(cs.PeerCertificates) == 0 {
		return ErrCertNotPinned
	}
	if _, ok := pinned[spkiDigest(cs.PeerCertificates[0])]; !ok {
		return ErrCertNotPinned
	}
	return nil
}

// spkiDigest is the pinned_certs form of a certificate: hex SHA-256 of its
// DER SubjectPublicKeyInfo.
func spkiDigest(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return hex.EncodeToString(sum[:])
}

// tlsClientFailed logs a failed client handshake, tells a plain-text (or
// silent) client that TLS is required, closes and records the connection.
func (s *Server) tlsClientFailed(c *client, raw net.Conn, err error, handshake bool) {
	var rhe tls.RecordHeaderError
	var ne net.Error
	plain := errors.As(err, &rhe) && rhe.Conn != nil
	silent := errors.As(err, &ne) && ne.Timeout()
	if handshake && (plain || silent) {
		s.Debugf("%s - TLS handshake error: %v", c, err)
		_ = raw.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = raw.Write([]byte(tlsRequiredErr))
		drainBeforeClose(raw)
	} else {
		s.Errorf("%s - TLS handshake error: %v", c, err)
	}
	raw.Close()
	c.markClosed(TLSHandshakeError)
	s.stats.totalConns.Add(1)
	s.closed.add(c.connInfo(time.Now().UTC(), true))
}

// drainBeforeClose reads (bounded in bytes and time) what the peer sent,
// so closing does not reset the connection and lose the error just written.
func drainBeforeClose(nc net.Conn) {
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	_ = nc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	_, _ = io.Copy(io.Discard, io.LimitReader(nc, 64*1024))
}

// peekBytes reads up to n bytes, waiting at most d for the first of them.
func peekBytes(nc net.Conn, n int, d time.Duration) []byte {
	buf := make([]byte, n)
	_ = nc.SetReadDeadline(time.Now().Add(d))
	m, _ := nc.Read(buf)
	_ = nc.SetReadDeadline(time.Time{})
	return buf[:m]
}

// prefixConn replays bytes already read before reading from the Conn.
type prefixConn struct {
	net.Conn
	pre []byte
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.pre) > 0 {
		n := copy(b, p.pre)
		p.pre = p.pre[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

func tlsVersionName(v uint16) string {
	switch v {
	case tls.VersionTLS12:
		return "1.2"
	case tls.VersionTLS13:
		return "1.3"
	}
	return tls.VersionName(v)
}

// peerCert is the client's verified certificate, nil without TLS. c.nc is
// set before the client is registered and never changes after.
func (c *client) peerCert() *x509.Certificate {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return nil
	}
	if certs := tc.ConnectionState().PeerCertificates; len(certs) > 0 {
		return certs[0]
	}
	return nil
}

// routeTLS wraps a route connection in TLS when cluster { tls {} } is set:
// the dialler is the TLS client (verifying the server by the route URL's
// host), the acceptor the server; both verify the peer's certificate.
func (s *Server) routeTLS(nc net.Conn, solicited bool, u *url.URL) (net.Conn, error) {
	o := s.getOpts()
	if o.Cluster.TLSConfig == nil {
		return nc, nil
	}
	var tc *tls.Conn
	if solicited {
		cfg := o.Cluster.TLSConfig.Clone()
		if cfg.ServerName == "" && u != nil {
			cfg.ServerName = u.Hostname()
		}
		tc = tls.Client(nc, cfg)
	} else {
		tc = tls.Server(nc, o.Cluster.TLSConfig)
	}
	if err := s.handshake(tc, nc, tlsTimeout(o.Cluster.TLSTimeout), o.Cluster.TLSPinnedCerts); err != nil {
		nc.Close()
		s.Errorf("TLS route handshake error with %s: %v", nc.RemoteAddr(), err)
		return nil, err
	}
	return tc, nil
}

// monitorTLSListener serves HTTPS with the client TLS configuration current
// at each handshake (so a reload rotates its certificate too), without
// asking for client certificates, as nats-server's https monitoring does.
func (s *Server) monitorTLSListener(l net.Listener) net.Listener {
	cfg := &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		tc := s.getOpts().TLSConfig
		if tc == nil {
			return nil, errors.New("no TLS configuration")
		}
		tc = tc.Clone()
		tc.ClientAuth = tls.NoClientCert
		return tc, nil
	}}
	return tls.NewListener(l, cfg)
}

// httpErrorLog sends the HTTP servers' own errors (failed HTTPS handshakes
// among them) to the server's debug log instead of stderr.
func (s *Server) httpErrorLog() *log.Logger {
	return log.New(debugWriter{s}, "", 0)
}

type debugWriter struct{ s *Server }

func (w debugWriter) Write(p []byte) (int, error) {
	w.s.Debugf("%s", strings.TrimSpace(string(p)))
	return len(p), nil
}

// tlsConnInfo adds the TLS version and cipher suite to /connz.
func (c *client) tlsConnInfo(ci *ConnInfo) {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return
	}
	cs := tc.ConnectionState()
	ci.TLSVersion, ci.TLSCipher = tlsVersionName(cs.Version), tls.CipherSuiteName(cs.CipherSuite)
	ci.TLSFirst = c.tlsFirst
}
