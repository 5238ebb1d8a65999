package server

import (
	"bufio"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

const tlsConf = `
tls {
  cert_file: "%CERT%"
  key_file: "%KEY%"
  %EXTRA%
}
`

// runTLSServer starts a server whose config file has a tls block with the
// CA's server certificate and extra lines inside the block.
func runTLSServer(t *testing.T, ca *testCA, extra string) *Server {
	t.Helper()
	srv := ca.serverCert("server")
	p := writeConf(t, tlsConf, map[string]string{"CERT": srv.certFile, "KEY": srv.keyFile, "EXTRA": extra})
	return runServer(t, confOptions(t, p))
}

// readInfo reads the INFO line from a plain connection and decodes it.
func readInfo(t *testing.T, br *bufio.Reader) Info {
	t.Helper()
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "INFO ") {
		t.Fatalf("expected INFO, got %q (%v)", line, err)
	}
	var info Info
	if err := json.Unmarshal([]byte(line[5:]), &info); err != nil {
		t.Fatal(err)
	}
	return info
}

func pubSubRoundTrip(t *testing.T, nc *nats.Conn, subject string) {
	t.Helper()
	sub, err := nc.SubscribeSync(subject)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Publish(subject, []byte("secret")); err != nil {
		t.Fatal(err)
	}
	m, err := sub.NextMsg(5 * time.Second)
	if err != nil || string(m.Data) != "secret" {
		t.Fatalf("round trip on %s: %v", subject, err)
	}
}

func TestTLSClientConnectsAndPubSubs(t *testing.T) {
	ca := newTestCA(t, "ca")
	s := runTLSServer(t, ca, "")
	nc, err := nats.Connect(s.ClientURL(), nats.RootCAs(ca.caFile), nats.Secure())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if !nc.TLSRequired() {
		t.Fatal("client does not see tls_required")
	}
	st, err := nc.TLSConnectionState()
	if err != nil || !st.HandshakeComplete {
		t.Fatalf("connection not TLS: %v", err)
	}
	pubSubRoundTrip(t, nc, "tls.ok")

	// INFO in clear, before the handshake, says TLS is required and that no
	// client certificate is asked for.
	raw := dialRaw(t, s)
	info := readInfo(t, raw.br)
	if !info.TLSRequired || info.TLSVerify || info.TLSAvailable {
		t.Fatalf("INFO tls fields: required=%v verify=%v available=%v", info.TLSRequired, info.TLSVerify, info.TLSAvailable)
	}
}

// A plain-text client gets nats-server's error and is closed; before TLS
// existed the tls block was dropped and this client was served in clear.
func TestTLSPlainClientRefused(t *testing.T) {
	ca := newTestCA(t, "ca")
	s := runTLSServer(t, ca, "")
	raw := dialRaw(t, s)
	readInfo(t, raw.br)
	raw.send("CONNECT {\"verbose\":false}\r\nPING\r\n")
	raw.expect("-ERR 'Secure Connection - TLS Required'\r\n")
	raw.expectClosed()

	// One that says nothing gets the same once the handshake times out.
	s2 := runTLSServer(t, ca, "timeout: 0.2")
	raw2 := dialRaw(t, s2)
	readInfo(t, raw2.br)
	raw2.expect("-ERR 'Secure Connection - TLS Required'\r\n")
	raw2.expectClosed()

	// nats.go upgrades on its own when INFO requires TLS (and here does
	// not trust the server's CA).
	if _, err := nats.Connect(s.ClientURL()); err == nil || !strings.Contains(err.Error(), "tls") {
		t.Fatalf("plain nats.go connect: %v, want a TLS error", err)
	}
	waitFor(t, 5*time.Second, "closed connections recorded", func() bool {
		cz, _ := s.Connz(&ConnzOptions{State: ConnClosed})
		return cz != nil && len(cz.Conns) > 0 && cz.Conns[0].Reason == TLSHandshakeError.String()
	})
}

func TestTLSHandshakeFirst(t *testing.T) {
	ca := newTestCA(t, "ca")
	s := runTLSServer(t, ca, "handshake_first: true\n  timeout: 1")
	nc, err := nats.Connect(s.ClientURL(), nats.RootCAs(ca.caFile), nats.TLSHandshakeFirst())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	pubSubRoundTrip(t, nc, "first")
	cz, _ := s.Connz(nil)
	if len(cz.Conns) != 1 || !cz.Conns[0].TLSFirst || cz.Conns[0].TLSVersion != "1.3" || cz.Conns[0].TLSCipher == "" {
		t.Fatalf("connz TLS fields: %+v", cz.Conns)
	}

	// No INFO in clear: a plain client hears nothing until the handshake
	// times out, then the error.
	raw := dialRaw(t, s)
	raw.expect("-ERR 'Secure Connection - TLS Required'\r\n")
	raw.expectClosed()

	// A client that waits for INFO before its handshake cannot connect.
	if nc2, err := nats.Connect(s.ClientURL(), nats.RootCAs(ca.caFile), nats.Timeout(time.Second)); err == nil {
		nc2.Close()
		t.Fatal("INFO-first client connected to a handshake_first server")
	}
}

// handshake_first with a fallback delay serves both kinds of TLS client.
func TestTLSHandshakeFirstFallback(t *testing.T) {
	ca := newTestCA(t, "ca")
	s := runTLSServer(t, ca, `handshake_first: "300ms"`)
	if !s.getOpts().TLSHandshakeFirst || s.getOpts().TLSHandshakeFirstFallback != 300*time.Millisecond {
		t.Fatalf("options: first=%v fallback=%v", s.getOpts().TLSHandshakeFirst, s.getOpts().TLSHandshakeFirstFallback)
	}
	for _, opts := range [][]nats.Option{{nats.TLSHandshakeFirst()}, nil} {
		nc, err := nats.Connect(s.ClientURL(), append(opts, nats.RootCAs(ca.caFile), nats.Secure())...)
		if err != nil {
			t.Fatal(err)
		}
		pubSubRoundTrip(t, nc, "fallback")
		nc.Close()
	}
}

func TestTLSVerifyRequiresClientCert(t *testing.T) {
	ca := newTestCA(t, "ca")
	other := newTestCA(t, "other")
	s := runTLSServer(t, ca, "ca_file: \""+ca.caFile+"\"\n  verify: true")
	good := ca.issue("alice", certSpec{subject: pkix.Name{CommonName: "alice"}, client: true})
	foreign := other.issue("mallory", certSpec{subject: pkix.Name{CommonName: "mallory"}, client: true})

	raw := dialRaw(t, s)
	if info := readInfo(t, raw.br); !info.TLSRequired || !info.TLSVerify {
		t.Fatalf("INFO: tls_required=%v tls_verify=%v", info.TLSRequired, info.TLSVerify)
	}
	nc, err := nats.Connect(s.ClientURL(), nats.Secure(ca.clientTLS(good)))
	if err != nil {
		t.Fatal(err)
	}
	pubSubRoundTrip(t, nc, "verified")
	nc.Close()

	for name, cfg := range map[string]*tls.Config{"no cert": ca.clientTLS(nil), "other CA": ca.clientTLS(foreign)} {
		nc, err := nats.Connect(s.ClientURL(), nats.Secure(cfg), nats.NoReconnect(), nats.Timeout(2*time.Second))
		if err == nil {
			// TLS 1.3 reports the refused certificate after the client's
			// side of the handshake: the connection must die at once.
			_, ferr := nc.Request("x", nil, time.Second)
			nc.Close()
			if ferr == nil || !nc.IsClosed() {
				t.Fatalf("%s: connection usable (%v)", name, ferr)
			}
		}
	}
}

func TestTLSVerifyAndMapUsers(t *testing.T) {
	ca := newTestCA(t, "ca")
	conf := `
tls { cert_file: "%CERT%", key_file: "%KEY%", ca_file: "%CA%", verify_and_map: true }
authorization {
  users = [
    { user: "alice@acme.io", permissions: { publish: "alice.>", subscribe: ["alice.>", "_INBOX.>"] } }
    { user: "CN=bob,OU=eng,O=Acme" }
    { user: "carol", password: "pwd" }
  ]
}`
	srv := ca.serverCert("server")
	p := writeConf(t, conf, map[string]string{"CERT": srv.certFile, "KEY": srv.keyFile, "CA": ca.caFile})
	s := runServer(t, confOptions(t, p))
	if !s.getOpts().TLSMap || s.getOpts().TLSConfig.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Fatal("verify_and_map did not set TLSMap and verification")
	}
	alice := ca.issue("alice", certSpec{subject: pkix.Name{CommonName: "Alice Smith"}, emails: []string{"alice@acme.io"}, client: true})
	bob := ca.issue("bob", certSpec{subject: pkix.Name{CommonName: "bob", OrganizationalUnit: []string{"eng"}, Organization: []string{"Acme"}}, client: true})
	eve := ca.issue("eve", certSpec{subject: pkix.Name{CommonName: "eve"}, client: true})

	errs := make(chan error, 10)
	onErr := nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err })
	nc, err := nats.Connect(s.ClientURL(), nats.Secure(ca.clientTLS(alice)), onErr)
	if err != nil {
		t.Fatalf("alice: %v", err)
	}
	defer nc.Close()
	pubSubRoundTrip(t, nc, "alice.x")
	if err := nc.Publish("bob.x", nil); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		if !strings.Contains(err.Error(), `Permissions Violation for Publish to "bob.x"`) {
			t.Fatalf("alice error: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("alice's permissions were not applied")
	}
	waitFor(t, 5*time.Second, "alice in connz", func() bool {
		cz, _ := s.Connz(&ConnzOptions{Username: true})
		return cz != nil && len(cz.Conns) == 1 && cz.Conns[0].AuthorizedUser == "alice@acme.io"
	})

	// The subject DN maps bob; the user and password in CONNECT are ignored.
	nb, err := nats.Connect(s.ClientURL(), nats.Secure(ca.clientTLS(bob)), nats.UserInfo("carol", "pwd"))
	if err != nil {
		t.Fatalf("bob: %v", err)
	}
	pubSubRoundTrip(t, nb, "anything")
	nb.Close()

	// A verified certificate that maps to no user is refused, passwords or not.
	for _, opt := range []nats.Option{nats.UserInfo("carol", "pwd"), nats.Name("eve")} {
		if ne, err := nats.Connect(s.ClientURL(), nats.Secure(ca.clientTLS(eve)), opt, nats.NoReconnect()); err == nil {
			ne.Close()
			t.Fatal("unmapped certificate accepted")
		} else if !strings.Contains(err.Error(), "Authorization Violation") {
			t.Fatalf("eve: %v", err)
		}
	}
}

func TestTLSMapDNInAnyOrder(t *testing.T) {
	ca := newTestCA(t, "ca")
	c := ca.issue("dn", certSpec{subject: pkix.Name{CommonName: "svc", Organization: []string{"Acme"}, Country: []string{"US"}}, client: true})
	users := map[string]*User{"o=Acme, cn=svc ,C=US": {Username: "o=Acme, cn=svc ,C=US"}}
	if u := certUser(users, c.cert); u == nil {
		t.Fatalf("DN %q not matched to %q", c.cert.Subject.ToRDNSequence().String(), "o=Acme, cn=svc ,C=US")
	}
	if u := certUser(map[string]*User{"CN=svc,O=Acme": {}}, c.cert); u != nil {
		t.Fatal("a DN with fewer attributes matched")
	}
}

func TestTLSPinnedCerts(t *testing.T) {
	ca := newTestCA(t, "ca")
	a := ca.issue("a", certSpec{subject: pkix.Name{CommonName: "a"}, client: true})
	b := ca.issue("b", certSpec{subject: pkix.Name{CommonName: "b"}, client: true})
	s := runTLSServer(t, ca, "ca_file: \""+ca.caFile+"\"\n  verify: true\n  pinned_certs: [\""+strings.ToUpper(spkiDigest(a.cert))+"\"]")
	nc, err := nats.Connect(s.ClientURL(), nats.Secure(ca.clientTLS(a)))
	if err != nil {
		t.Fatalf("pinned cert refused: %v", err)
	}
	pubSubRoundTrip(t, nc, "pinned")
	nc.Close()
	nb, err := nats.Connect(s.ClientURL(), nats.Secure(ca.clientTLS(b)), nats.NoReconnect(), nats.Timeout(2*time.Second))
	if err == nil {
		_, ferr := nb.Request("x", nil, time.Second)
		nb.Close()
		if ferr == nil {
			t.Fatal("unpinned certificate accepted")
		}
	}
}

// Embedders set Options.TLSConfig from GenTLSConfig, as nats-server's test
// helpers and nats.go's tests do.
func TestTLSEmbedderGenTLSConfig(t *testing.T) {
	ca := newTestCA(t, "ca")
	srv := ca.serverCert("server")
	cli := ca.issue("cli", certSpec{subject: pkix.Name{CommonName: "cli"}, client: true})
	cfg, err := GenTLSConfig(&TLSConfigOpts{CertFile: srv.certFile, KeyFile: srv.keyFile, CaFile: ca.caFile, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	o := testOptions()
	o.TLSConfig = cfg
	s := runServer(t, o)
	if s.getOpts().TLSTimeout != 2 || s.getOpts().AuthTimeout != 3 {
		t.Fatalf("defaults: tls_timeout %v auth_timeout %v", s.getOpts().TLSTimeout, s.getOpts().AuthTimeout)
	}
	nc, err := nats.Connect(s.ClientURL(), nats.RootCAs(ca.caFile), nats.ClientCert(cli.certFile, cli.keyFile))
	if err != nil {
		t.Fatal(err)
	}
	pubSubRoundTrip(t, nc, "embed")
	nc.Close()

	// The certificate fields alone turn TLS on too, never off silently.
	o2 := testOptions()
	o2.TLSCert, o2.TLSKey = srv.certFile, srv.keyFile
	s2 := runServer(t, o2)
	nc2, err := nats.Connect(s2.ClientURL(), nats.RootCAs(ca.caFile))
	if err != nil {
		t.Fatal(err)
	}
	if !nc2.TLSRequired() {
		t.Fatal("TLSCert/TLSKey without TLSConfig: TLS not required")
	}
	nc2.Close()
	o3 := testOptions()
	o3.TLS = true
	if _, err := NewServer(o3); err == nil || !strings.Contains(err.Error(), "certificate must be present") {
		t.Fatalf("TLS without a certificate: %v", err)
	}
	o4 := testOptions()
	o4.TLSMap = true
	if _, err := NewServer(o4); err == nil {
		t.Fatal("TLSMap without TLS accepted")
	}
	if _, err := GenTLSConfig(&TLSConfigOpts{CertFile: srv.certFile}); err == nil || !strings.Contains(err.Error(), "key_file") {
		t.Fatalf("missing key: %v", err)
	}
}

// In-process connections are never encrypted: INFO says TLS is available,
// not required, and clients connect in clear.
func TestTLSInProcessConnection(t *testing.T) {
	ca := newTestCA(t, "ca")
	s := runTLSServer(t, ca, "")
	nc, err := nats.Connect("", nats.InProcessServer(s))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	pubSubRoundTrip(t, nc, "inproc")
	conn, err := s.InProcessConn()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	info := readInfo(t, bufio.NewReader(conn))
	if info.TLSRequired || !info.TLSAvailable {
		t.Fatalf("in-process INFO: required=%v available=%v", info.TLSRequired, info.TLSAvailable)
	}
}

// A client stuck in its handshake does not hold up shutdown.
func TestTLSShutdownDuringHandshake(t *testing.T) {
	ca := newTestCA(t, "ca")
	s := runTLSServer(t, ca, "timeout: 60")
	nc, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	readInfo(t, bufio.NewReader(nc))
	done := make(chan struct{})
	go func() { s.Shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown waited for a pending TLS handshake")
	}
}

// allow_non_tls: INFO offers TLS, and each client picks by its first byte.
func TestTLSAllowNonTLS(t *testing.T) {
	ca := newTestCA(t, "ca")
	srv := ca.serverCert("server")
	p := writeConf(t, tlsConf+"allow_non_tls: true\n", map[string]string{"CERT": srv.certFile, "KEY": srv.keyFile, "EXTRA": ""})
	s := runServer(t, confOptions(t, p))
	raw := dialRaw(t, s)
	if info := readInfo(t, raw.br); info.TLSRequired || !info.TLSAvailable {
		t.Fatalf("INFO: required=%v available=%v", info.TLSRequired, info.TLSAvailable)
	}
	raw.send("CONNECT {\"verbose\":false}\r\nPING\r\n")
	raw.expect("PONG\r\n")

	plain, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := plain.TLSConnectionState(); err == nil {
		t.Fatal("plain client got TLS")
	}
	secure, err := nats.Connect(s.ClientURL(), nats.RootCAs(ca.caFile), nats.Secure())
	if err != nil {
		t.Fatal(err)
	}
	defer secure.Close()
	if st, err := secure.TLSConnectionState(); err != nil || !st.HandshakeComplete {
		t.Fatalf("secure client: %v", err)
	}
	sub, _ := secure.SubscribeSync("mixed")
	secure.Flush()
	plain.Publish("mixed", []byte("x"))
	if _, err := sub.NextMsg(5 * time.Second); err != nil {
		t.Fatal(err)
	}
}
