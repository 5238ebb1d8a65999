package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

func TestTLSMonitoringHTTPS(t *testing.T) {
	ca := newTestCA(t, "ca")
	srv := ca.serverCert("server")
	// verify: true for clients does not apply to the monitoring port.
	conf := `
https: "127.0.0.1:-1"
tls { cert_file: "%CERT%", key_file: "%KEY%", ca_file: "%CA%", verify: true }
`
	p := writeConf(t, conf, map[string]string{"CERT": srv.certFile, "KEY": srv.keyFile, "CA": ca.caFile})
	o := confOptions(t, p)
	if o.HTTPSPort != RANDOM_PORT || o.HTTPHost != "127.0.0.1" {
		t.Fatalf("https: port %d host %q", o.HTTPSPort, o.HTTPHost)
	}
	s := runServer(t, o)
	addr := s.MonitorAddr()
	if addr == nil {
		t.Fatal("no monitoring listener")
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: ca.clientTLS(nil)}}
	resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d/varz", addr.Port))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v Varz
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || v.ID != s.ID() {
		t.Fatalf("varz over https: %v %q", err, v.ID)
	}
	if !v.TLSRequired || !v.TLSVerify || v.HTTPSPort != RANDOM_PORT {
		t.Fatalf("varz tls fields: required=%v verify=%v https_port=%d", v.TLSRequired, v.TLSVerify, v.HTTPSPort)
	}
	// Plain HTTP to the HTTPS port gets no varz.
	if r, err := (&http.Client{Timeout: 5 * time.Second}).Get(fmt.Sprintf("http://127.0.0.1:%d/varz", addr.Port)); err == nil {
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if strings.Contains(string(b), s.ID()) {
			t.Fatal("varz served over plain http")
		}
	}

	// -ms on the command line, and its checks.
	fo, err := ConfigureOptions(flag.NewFlagSet("t", flag.ContinueOnError), []string{"-ms", "8443", "-c", p}, nil, nil, nil)
	if err != nil || fo.HTTPSPort != 8443 {
		t.Fatalf("-ms: %v", err)
	}
	for name, o := range map[string]*Options{
		"both ports": {HTTPPort: 8222, HTTPSPort: 8443, TLSConfig: s.getOpts().TLSConfig},
		"no tls":     {HTTPSPort: 8443},
	} {
		if _, err := NewServer(o); err == nil {
			t.Fatalf("%s: accepted", name)
		}
	}
}

// tlsSerial connects as a TLS client (INFO in clear, then the handshake)
// and returns the serial of the server's certificate.
func tlsSerial(t *testing.T, s *Server, ca *testCA) *big.Int {
	t.Helper()
	nc, err := net.DialTimeout("tcp", s.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	if l, err := bufio.NewReader(nc).ReadString('\n'); err != nil || !strings.HasPrefix(l, "INFO ") {
		t.Fatalf("INFO: %q %v", l, err)
	}
	cfg := ca.clientTLS(nil)
	cfg.ServerName = "127.0.0.1"
	tc := tls.Client(nc, cfg)
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	return tc.ConnectionState().PeerCertificates[0].SerialNumber
}

func copyTestFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestTLSReloadRotatesCertificate(t *testing.T) {
	ca := newTestCA(t, "ca")
	first := ca.issue("first", certSpec{serial: 1001, subject: pkix.Name{CommonName: "server"}, server: true})
	second := ca.issue("second", certSpec{serial: 2002, subject: pkix.Name{CommonName: "server"}, server: true})
	live := ca.issue("live", certSpec{serial: 1001, subject: pkix.Name{CommonName: "server"}, server: true})
	copyTestFile(t, first.certFile, live.certFile)
	copyTestFile(t, first.keyFile, live.keyFile)
	p := writeConf(t, "listen: \"127.0.0.1:-1\"\ntls { cert_file: \"%CERT%\", key_file: \"%KEY%\" }\nhttps_port: -1\n",
		map[string]string{"CERT": live.certFile, "KEY": live.keyFile})
	s := runServer(t, confOptions(t, p))
	if got := tlsSerial(t, s, ca); got.Int64() != 1001 {
		t.Fatalf("serial %v, want 1001", got)
	}
	nc, err := nats.Connect(s.ClientURL(), nats.RootCAs(ca.caFile))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()

	copyTestFile(t, second.certFile, live.certFile)
	copyTestFile(t, second.keyFile, live.keyFile)
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := tlsSerial(t, s, ca); got.Int64() != 2002 {
		t.Fatalf("serial after reload %v, want 2002", got)
	}
	// The monitoring port serves the new certificate as well.
	tc, err := tls.Dial("tcp", s.MonitorAddr().String(), ca.clientTLS(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := tc.ConnectionState().PeerCertificates[0].SerialNumber; got.Int64() != 2002 {
		t.Fatalf("https serial after reload %v", got)
	}
	tc.Close()
	// The connection made before the reload is still served.
	pubSubRoundTrip(t, nc, "after.reload")

	// An embedder rotates with ReloadOptions and a new TLSConfig.
	cfg, err := GenTLSConfig(&TLSConfigOpts{CertFile: first.certFile, KeyFile: first.keyFile})
	if err != nil {
		t.Fatal(err)
	}
	nw := s.getOpts().Clone()
	nw.TLSConfig, nw.Port = cfg, RANDOM_PORT
	if err := s.ReloadOptions(nw); err != nil {
		t.Fatal(err)
	}
	if got := tlsSerial(t, s, ca); got.Int64() != 1001 {
		t.Fatalf("serial after ReloadOptions %v, want 1001", got)
	}
}

// With the certificate given by flags, a reload re-reads those files.
func TestTLSReloadRotatesFlagCertificate(t *testing.T) {
	ca := newTestCA(t, "ca")
	first := ca.issue("first", certSpec{serial: 31, subject: pkix.Name{CommonName: "s"}, server: true})
	second := ca.issue("second", certSpec{serial: 32, subject: pkix.Name{CommonName: "s"}, server: true})
	p := writeConf(t, "listen: \"127.0.0.1:-1\"\n", nil)
	o, err := ConfigureOptions(flag.NewFlagSet("t", flag.ContinueOnError),
		[]string{"-c", p, "--tlscert", first.certFile, "--tlskey", first.keyFile}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	o.NoSigs, o.NoLog = true, true
	s := runServer(t, o)
	if got := tlsSerial(t, s, ca); got.Int64() != 31 {
		t.Fatalf("serial %v", got)
	}
	copyTestFile(t, second.certFile, first.certFile)
	copyTestFile(t, second.keyFile, first.keyFile)
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := tlsSerial(t, s, ca); got.Int64() != 32 {
		t.Fatalf("serial after reload %v, want 32", got)
	}
}

func TestTLSFlags(t *testing.T) {
	ca := newTestCA(t, "ca")
	srv := ca.serverCert("server")
	parse := func(args ...string) (*Options, error) {
		return ConfigureOptions(flag.NewFlagSet("t", flag.ContinueOnError), args, nil, nil, nil)
	}
	o, err := parse("--tlsverify", "--tlscert", srv.certFile, "--tlskey", srv.keyFile, "--tlscacert", ca.caFile)
	if err != nil {
		t.Fatal(err)
	}
	if o.TLSConfig == nil || o.TLSConfig.ClientAuth != tls.RequireAndVerifyClientCert || o.TLSConfig.ClientCAs == nil {
		t.Fatal("--tlsverify did not build a verifying TLS config")
	}
	if o, err = parse("--tls", "--tlscert", srv.certFile, "--tlskey", srv.keyFile); err != nil || o.TLSConfig == nil || o.TLSConfig.ClientAuth != tls.NoClientCert {
		t.Fatalf("--tls: %v", err)
	}
	if _, err = parse("--tls"); err == nil || !strings.Contains(err.Error(), "certificate must be present") {
		t.Fatalf("--tls without a certificate: %v", err)
	}
	// --tls=false turns off the config file's tls block.
	p := writeConf(t, tlsConf, map[string]string{"CERT": srv.certFile, "KEY": srv.keyFile, "EXTRA": ""})
	if o, err = parse("-c", p, "--tls=false"); err != nil || o.TLSConfig != nil {
		t.Fatalf("--tls=false: %v, config %v", err, o.TLSConfig != nil)
	}
	if !strings.Contains(Usage(), "--tlscacert") {
		t.Fatal("usage does not list the TLS flags")
	}
}

// Each key of the tls block, and the errors with their file:line.
func TestTLSConfigFileKeys(t *testing.T) {
	ca := newTestCA(t, "ca")
	srv := ca.serverCert("server")
	b := ca.serverCert("b")
	vars := map[string]string{"CERT": srv.certFile, "KEY": srv.keyFile, "CA": ca.caFile, "B": b.certFile, "BK": b.keyFile}
	load := func(block string) (*Options, error) {
		return ProcessConfigFile(writeConf(t, "\n"+block+"\n", vars))
	}
	ok := func(block string) *Options {
		t.Helper()
		o, err := load(block)
		if err != nil {
			t.Fatalf("%s: %v", block, err)
		}
		return o
	}
	base := `cert_file: "%CERT%", key_file: "%KEY%"`
	o := ok(`tls { ` + base + `, ca_file: "%CA%", verify: true, timeout: 1.5, min_version: "1.3",
	  cipher_suites: ["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"], curve_preferences: ["CurveP256", "X25519"],
	  pinned_certs: ["` + spkiDigest(srv.cert) + `"], handshake_first: true }`)
	c := o.TLSConfig
	switch {
	case c.ClientAuth != tls.RequireAndVerifyClientCert || c.ClientCAs == nil:
		t.Fatal("verify / ca_file")
	case o.TLSTimeout != 1.5 || c.MinVersion != tls.VersionTLS13:
		t.Fatalf("timeout %v min_version %x", o.TLSTimeout, c.MinVersion)
	case len(c.CipherSuites) != 1 || c.CipherSuites[0] != tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256:
		t.Fatalf("cipher_suites %v", c.CipherSuites)
	case len(c.CurvePreferences) != 2 || c.CurvePreferences[1] != tls.X25519:
		t.Fatalf("curve_preferences %v", c.CurvePreferences)
	case len(o.TLSPinnedCerts) != 1 || !o.TLSHandshakeFirst || o.TLSHandshakeFirstFallback != 0:
		t.Fatal("pinned_certs / handshake_first")
	}
	if o := ok(`tls { ` + base + `, handshake_first: "auto" }`); o.TLSHandshakeFirstFallback != DEFAULT_TLS_HANDSHAKE_FIRST_FALLBACK_DELAY {
		t.Fatal("handshake_first: auto")
	}
	if o := ok(`tls { ` + base + `, timeout: "3s", verify_and_map: true }`); o.TLSTimeout != 3 || !o.TLSMap {
		t.Fatal("timeout as a duration / verify_and_map")
	}
	if o := ok(`tls { certs: [ {cert_file: "%CERT%", key_file: "%KEY%"}, {cert_file: "%B%", key_file: "%BK%"} ] }`); len(o.TLSConfig.Certificates) != 2 {
		t.Fatal("certs")
	}
	if o := ok(`cluster { port: -1, tls { ` + base + `, ca_file: "%CA%", insecure: true, timeout: 4 } }`); o.Cluster.TLSConfig == nil ||
		!o.Cluster.TLSConfig.InsecureSkipVerify || o.Cluster.TLSTimeout != 4 || o.Cluster.TLSConfig.RootCAs == nil {
		t.Fatal("cluster tls")
	}
	// Errors name the file and line of the offending key.
	for block, want := range map[string]string{
		"tls {\n  " + base + "\n  bogus: 1\n}":                                               `:4:3: error parsing tls config, unknown field "bogus"`,
		"tls {\n  " + base + "\n  min_version: \"1.1\"\n}":                                   ":4:3: error parsing tls config: unsupported TLS version: TLS 1.1",
		"tls {\n  " + base + "\n  cipher_suites: [\"NOPE\"]\n}":                              ":4:3: unrecognized cipher NOPE",
		"tls {\n  " + base + "\n  curve_preferences: [\"NOPE\"]\n}":                          ":4:3: unrecognized curve preference NOPE",
		"tls {\n  " + base + "\n  pinned_certs: [\"abc\"]\n}":                                ":4:3: error parsing tls config, 'pinned_certs' key abc does not look like",
		"tls {\n  " + base + "\n  handshake_first: \"soon\"\n}":                              `:4:3: field "handshake_first"'s value "soon" is invalid`,
		"tls {\n  cert_file: \"%CERT%\"\n}":                                                  ":2:1: missing 'key_file' in TLS configuration",
		"tls {\n  cert_file: \"/nonexistent\", key_file: \"%KEY%\"\n}":                       ":2:1: error parsing X509 certificate/key pair",
		"tls {\n  " + base + "\n  cipher_suites: [\"TLS_RSA_WITH_RC4_128_SHA\"]\n}":          ":2:1: insecure cipher suites configured without 'allow_insecure_cipher_suites'",
		"cluster {\n  port: -1\n  tls {\n    " + base + "\n    verify_and_map: true\n  }\n}": ":4:3: verify_and_map is not supported for routes",
		"tls {\n  " + base + "\n  connection_rate_limit: 5\n}":                               "",
	} {
		_, err := load(block)
		if want == "" {
			continue // parsed; NewServer refuses TLSRateLimit (opts_compat)
		}
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "server.conf") {
			t.Errorf("%q: error %v, want %q with the file name", block, err, want)
		}
	}
	if _, err := load("tls {\n  " + base + "\n  cipher_suites: [\"TLS_RSA_WITH_RC4_128_SHA\"]\n  allow_insecure_cipher_suites: true\n}"); err != nil {
		t.Fatalf("allow_insecure_cipher_suites: %v", err)
	}
	o = ok("tls {\n  " + base + "\n  connection_rate_limit: 5\n}")
	if _, err := NewServer(o); err == nil || !strings.Contains(err.Error(), "TLSRateLimit") {
		t.Fatalf("connection_rate_limit: %v", err)
	}
}

// The nats CLI with a client certificate against a verifying server.
func TestTLSNatsCLI(t *testing.T) {
	cli := natsCLI(t)
	ca := newTestCA(t, "ca")
	s := runTLSServer(t, ca, "ca_file: \""+ca.caFile+"\"\n  verify: true")
	cert := ca.issue("cli", certSpec{subject: pkix.Name{CommonName: "cli"}, client: true})
	nc, err := nats.Connect(s.ClientURL(), nats.Secure(ca.clientTLS(cert)))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, _ := nc.SubscribeSync("cli.tls")
	nc.Flush()
	url := strings.Replace(s.ClientURL(), "nats://", "tls://", 1)
	runCLI(t, cli, "--server", url, "--tlscert", cert.certFile, "--tlskey", cert.keyFile, "--tlsca", ca.caFile,
		"pub", "cli.tls", "from-cli")
	if m, err := sub.NextMsg(5 * time.Second); err != nil || string(m.Data) != "from-cli" {
		t.Fatalf("message from the CLI: %v", err)
	}
	// Without the client certificate the CLI cannot publish.
	cmd := cliCommand(t, cli, "--server", url, "--tlsca", ca.caFile, "pub", "cli.tls", "x")
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("CLI without a certificate succeeded: %s", out)
	}
}

func cliCommand(t *testing.T, cli string, args ...string) *exec.Cmd {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, cli, args...)
	cmd.Env = append(os.Environ(), "NATS_CONTEXT=", "HOME="+t.TempDir())
	return cmd
}
