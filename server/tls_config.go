package server

// TLS settings: the tls {} block of a config file (for clients and, inside
// cluster {}, for routes), the --tls* flags, and GenTLSConfig, which turns
// either into a *tls.Config. The handshakes are in tls_conn.go.

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/conf"
)

// TLSConfigOpts are the settings GenTLSConfig builds a *tls.Config from
// (nats-server's names; Tern has no OS certificate store and no OCSP, so
// their fields are absent).
type TLSConfigOpts struct {
	CertFile             string
	KeyFile              string
	CaFile               string
	Verify               bool
	Insecure             bool
	Map                  bool
	TLSCheckKnownURLs    bool
	HandshakeFirst       bool
	FallbackDelay        time.Duration
	Timeout              float64
	RateLimit            int64
	AllowInsecureCiphers bool
	Ciphers              []uint16
	CurvePreferences     []tls.CurveID
	PinnedCerts          PinnedCertSet
	Certificates         []*TLSCertPairOpt
	MinVersion           uint16
}

// TLSCertPairOpt names one certificate and its private key.
type TLSCertPairOpt struct {
	CertFile string
	KeyFile  string
}

const (
	// TLS_TIMEOUT is the default TLS handshake timeout.
	TLS_TIMEOUT = 2 * time.Second
	// DEFAULT_TLS_HANDSHAKE_FIRST_FALLBACK_DELAY is the wait of
	// handshake_first: "auto" before the server sends INFO first instead.
	DEFAULT_TLS_HANDSHAKE_FIRST_FALLBACK_DELAY = 50 * time.Millisecond
)

// GenTLSConfig loads the certificates, keys and CAs tc names into a
// *tls.Config. ca_file fills ClientCAs (the pool client certificates are
// verified against); Verify requires and verifies a client certificate.
func GenTLSConfig(tc *TLSConfigOpts) (*tls.Config, error) {
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		CipherSuites:       tc.Ciphers,
		CurvePreferences:   tc.CurvePreferences,
		InsecureSkipVerify: tc.Insecure,
	}
	switch {
	case tc.CertFile != "" && tc.KeyFile == "":
		return nil, errors.New("missing 'key_file' in TLS configuration")
	case tc.CertFile == "" && tc.KeyFile != "":
		return nil, errors.New("missing 'cert_file' in TLS configuration")
	case tc.CertFile != "":
		cert, err := loadKeyPair(tc.CertFile, tc.KeyFile)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	default:
		for i, p := range tc.Certificates {
			cert, err := loadKeyPair(p.CertFile, p.KeyFile)
			if err != nil {
				return nil, fmt.Errorf("certificate pair %d/%d: %w", i+1, len(tc.Certificates), err)
			}
			cfg.Certificates = append(cfg.Certificates, cert)
		}
	}
	if tc.Verify {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	if tc.CaFile != "" {
		pool, err := loadCAPool(tc.CaFile)
		if err != nil {
			return nil, err
		}
		cfg.ClientCAs = pool
	}
	if tc.MinVersion > 0 {
		if tc.MinVersion < tls.VersionTLS12 {
			return nil, fmt.Errorf("unsupported minimum TLS version: %s", tls.VersionName(tc.MinVersion))
		}
		cfg.MinVersion = tc.MinVersion
	}
	return cfg, nil
}

func loadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return cert, fmt.Errorf("error parsing X509 certificate/key pair: %v", err)
	}
	if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
		return cert, fmt.Errorf("error parsing certificate: %v", err)
	}
	return cert, nil
}

func loadCAPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("error reading ca_file: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("failed to parse root ca certificate")
	}
	return pool, nil
}

// cipherSuiteByName knows every suite Go implements, secure or not.
func cipherSuiteByName(name string) *tls.CipherSuite {
	for _, cs := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		if cs.Name == name {
			return cs
		}
	}
	return nil
}

var curvesByName = map[string]tls.CurveID{
	"X25519MLKEM768": tls.X25519MLKEM768, "SecP256r1MLKEM768": tls.SecP256r1MLKEM768,
	"SecP384r1MLKEM1024": tls.SecP384r1MLKEM1024, "X25519": tls.X25519,
	"CurveP256": tls.CurveP256, "CurveP384": tls.CurveP384, "CurveP521": tls.CurveP521,
}

func defaultCipherSuites() []uint16 {
	var ids []uint16
	for _, cs := range tls.CipherSuites() {
		ids = append(ids, cs.ID)
	}
	return ids
}

func defaultCurvePreferences() []tls.CurveID {
	return []tls.CurveID{tls.X25519MLKEM768, tls.SecP384r1MLKEM1024, tls.SecP256r1MLKEM768,
		tls.X25519, tls.CurveP256, tls.CurveP384, tls.CurveP521}
}

// parseTLSBlock reads a tls {} block; problems are reported on ce with the
// position of the offending key. It returns nil when the block is unusable.
func parseTLSBlock(ce *configErrors, tk any) *TLSConfigOpts {
	m := asMap(ce, tk)
	if m == nil {
		return nil
	}
	nerr := len(ce.errs)
	tc := &TLSConfigOpts{}
	var insecure []string
	for k, v := range m {
		insecure = append(insecure, tc.setTLSKey(ce, strings.ToLower(k), v)...)
	}
	if len(tc.Certificates) > 0 && tc.CertFile != "" {
		ce.errf(tk, "error parsing tls config, cannot combine 'cert_file' option with 'certs' option")
	}
	if len(insecure) > 0 && !tc.AllowInsecureCiphers {
		ce.errf(tk, "insecure cipher suites configured without 'allow_insecure_cipher_suites' option set: %s", strings.Join(insecure, ", "))
	}
	if tc.Ciphers == nil {
		tc.Ciphers = defaultCipherSuites()
	}
	if tc.CurvePreferences == nil {
		tc.CurvePreferences = defaultCurvePreferences()
	}
	if len(ce.errs) > nerr {
		return nil
	}
	return tc
}

// setTLSKey applies one key of a tls block; it returns the names of
// insecure cipher suites the key asked for.
func (tc *TLSConfigOpts) setTLSKey(ce *configErrors, k string, v any) []string {
	switch k {
	case "cert_file":
		tc.CertFile = asString(ce, v)
	case "key_file":
		tc.KeyFile = asString(ce, v)
	case "ca_file":
		tc.CaFile = asString(ce, v)
	case "insecure":
		tc.Insecure = asBool(ce, v)
	case "verify":
		tc.Verify = asBool(ce, v)
	case "verify_and_map":
		tc.Map = asBool(ce, v)
		tc.Verify = tc.Verify || tc.Map
	case "allow_insecure_cipher_suites":
		tc.AllowInsecureCiphers = asBool(ce, v)
	case "timeout":
		tc.Timeout = asSeconds(ce, v)
	case "connection_rate_limit":
		tc.RateLimit = int64(asInt(ce, v))
	case "cipher_suites":
		return tc.parseCiphers(ce, v)
	case "curve_preferences":
		tc.parseCurves(ce, v)
	case "pinned_certs":
		tc.PinnedCerts = parsePinnedCerts(ce, v)
	case "handshake_first", "first", "immediate":
		tc.parseHandshakeFirst(ce, k, v)
	case "min_version":
		tc.MinVersion = parseTLSMinVersion(ce, v)
	case "certs", "certificates":
		tc.Certificates = parseCertPairs(ce, v)
	default:
		ce.errf(v, "error parsing tls config, unknown field %q", k)
	}
	return nil
}

func (tc *TLSConfigOpts) parseCiphers(ce *configErrors, v any) []string {
	names := asStrings(ce, v)
	if len(names) == 0 {
		ce.errf(v, "error parsing tls config, 'cipher_suites' cannot be empty")
		return nil
	}
	var insecure []string
	tc.Ciphers = []uint16{}
	for _, n := range names {
		cs := cipherSuiteByName(n)
		if cs == nil {
			ce.errf(v, "unrecognized cipher %s", n)
			continue
		}
		tc.Ciphers = append(tc.Ciphers, cs.ID)
		if cs.Insecure {
			insecure = append(insecure, cs.Name)
		}
	}
	return insecure
}

func (tc *TLSConfigOpts) parseCurves(ce *configErrors, v any) {
	names := asStrings(ce, v)
	if len(names) == 0 {
		ce.errf(v, "error parsing tls config, 'curve_preferences' cannot be empty")
		return
	}
	tc.CurvePreferences = []tls.CurveID{}
	for _, n := range names {
		id, ok := curvesByName[n]
		if !ok {
			ce.errf(v, "unrecognized curve preference %s", n)
			continue
		}
		tc.CurvePreferences = append(tc.CurvePreferences, id)
	}
}

// parsePinnedCerts takes hex SHA-256 digests of SubjectPublicKeyInfo.
func parsePinnedCerts(ce *configErrors, v any) PinnedCertSet {
	set := PinnedCertSet{}
	for _, s := range asStrings(ce, v) {
		s = strings.ToLower(s)
		if b, err := hex.DecodeString(s); err != nil || len(b) != 32 {
			ce.errf(v, "error parsing tls config, 'pinned_certs' key %s does not look like hex-encoded sha256 of DER encoded SubjectPublicKeyInfo", s)
			continue
		}
		set[s] = struct{}{}
	}
	if len(set) == 0 {
		return nil
	}
	return set
}

func (tc *TLSConfigOpts) parseHandshakeFirst(ce *configErrors, k string, v any) {
	switch x := conf.Unwrap(v).(type) {
	case bool:
		tc.HandshakeFirst = x
	case string:
		switch strings.ToLower(x) {
		case "true", "on":
			tc.HandshakeFirst = true
		case "false", "off":
			tc.HandshakeFirst = false
		case "auto", "auto_fallback":
			tc.HandshakeFirst, tc.FallbackDelay = true, DEFAULT_TLS_HANDSHAKE_FIRST_FALLBACK_DELAY
		default:
			d, err := time.ParseDuration(x)
			if err != nil {
				ce.errf(v, "field %q's value %q is invalid", k, x)
				return
			}
			tc.HandshakeFirst, tc.FallbackDelay = true, d
		}
	default:
		ce.errf(v, "field %q should be a boolean or a string, got %T", k, x)
	}
}

func parseTLSMinVersion(ce *configErrors, v any) uint16 {
	s, ok := conf.Unwrap(v).(string)
	if !ok {
		ce.errf(v, "error parsing tls config: 'min_version' wrong type: %v", conf.Unwrap(v))
		return 0
	}
	versions := map[string]uint16{"1.0": tls.VersionTLS10, "1.1": tls.VersionTLS11, "1.2": tls.VersionTLS12, "1.3": tls.VersionTLS13}
	n, ok := versions[s]
	switch {
	case !ok:
		ce.errf(v, "error parsing tls config: unknown version: %v", s)
	case n < tls.VersionTLS12:
		ce.errf(v, "error parsing tls config: unsupported TLS version: %s", tls.VersionName(n))
	default:
		return n
	}
	return 0
}

func parseCertPairs(ce *configErrors, v any) []*TLSCertPairOpt {
	arr, ok := conf.Unwrap(v).([]any)
	if !ok {
		ce.errf(v, "error parsing certificates config: unsupported type %T", conf.Unwrap(v))
		return nil
	}
	var pairs []*TLSCertPairOpt
	for _, e := range arr {
		p := &TLSCertPairOpt{}
		for k, f := range asMap(ce, e) {
			switch k {
			case "cert_file":
				p.CertFile = asString(ce, f)
			case "key_file":
				p.KeyFile = asString(ce, f)
			default:
				ce.errf(f, "error parsing tls certs config, unknown field %q", k)
			}
		}
		if p.CertFile == "" || p.KeyFile == "" {
			ce.errf(e, "error parsing certificates config: both 'cert_file' and 'cert_key' options are required")
			continue
		}
		pairs = append(pairs, p)
	}
	return pairs
}

// parseTLSConfig reads a tls {} block and builds its *tls.Config; cfg is
// nil when the block has errors (reported to ce).
func parseTLSConfig(ce *configErrors, tk any) (*TLSConfigOpts, *tls.Config) {
	tc := parseTLSBlock(ce, tk)
	if tc == nil {
		return nil, nil
	}
	cfg, err := GenTLSConfig(tc)
	if err != nil {
		ce.errf(tk, "%v", err)
		return nil, nil
	}
	return tc, cfg
}

// parseClientTLS handles the top-level tls {} block.
func (o *Options) parseClientTLS(ce *configErrors, tk any) {
	tc, cfg := parseTLSConfig(ce, tk)
	if cfg == nil {
		return
	}
	o.TLSConfig = cfg
	o.TLSTimeout = tc.Timeout
	o.TLSMap = tc.Map
	o.TLSPinnedCerts = tc.PinnedCerts
	o.TLSRateLimit = tc.RateLimit
	o.TLSHandshakeFirst = tc.HandshakeFirst
	o.TLSHandshakeFirstFallback = tc.FallbackDelay
}

// parseClusterTLS handles cluster { tls {} }. Routes always verify their
// peer: each side is both TLS client and server, so the CAs that verify
// incoming certificates also verify the server dialled.
func (o *Options) parseClusterTLS(ce *configErrors, tk any) {
	tc, cfg := parseTLSConfig(ce, tk)
	if cfg == nil {
		return
	}
	cfg.ClientAuth = tls.RequireAndVerifyClientCert
	cfg.RootCAs = cfg.ClientCAs
	o.Cluster.TLSConfig = cfg
	o.Cluster.TLSTimeout = tc.Timeout
	o.Cluster.TLSPinnedCerts = tc.PinnedCerts
	if tc.Map {
		ce.errf(tk, "verify_and_map is not supported for routes by Tern yet")
	}
}

// overrideTLS builds TLSConfig from the --tls* flags (or the same fields
// set by an embedder without a TLSConfig).
func overrideTLS(o *Options) error {
	if o.TLSCert == "" {
		return errors.New("TLS Server certificate must be present and valid")
	}
	if o.TLSKey == "" {
		return errors.New("TLS Server private key must be present and valid")
	}
	tc := &TLSConfigOpts{CertFile: o.TLSCert, KeyFile: o.TLSKey, CaFile: o.TLSCaCert,
		Verify: o.TLSVerify, Ciphers: defaultCipherSuites()}
	cfg, err := GenTLSConfig(tc)
	if err != nil {
		return err
	}
	o.TLSConfig = cfg
	return nil
}

// tlsTimeout converts a TLS timeout in seconds (2 s when unset).
func tlsTimeout(secs float64) time.Duration {
	if secs <= 0 {
		return TLS_TIMEOUT
	}
	return time.Duration(secs * float64(time.Second))
}

// setTLSDefaults fills the TLS timeouts (and, with TLS, an auth timeout
// that leaves room for the handshake), as nats-server does.
func setTLSDefaults(o *Options) {
	if o.TLSTimeout == 0 {
		o.TLSTimeout = TLS_TIMEOUT.Seconds()
	}
	if o.TLSConfig != nil && o.AuthTimeout == 0 {
		o.AuthTimeout = o.TLSTimeout + 1
	}
	if o.Cluster.TLSConfig != nil && o.Cluster.TLSTimeout == 0 {
		o.Cluster.TLSTimeout = TLS_TIMEOUT.Seconds()
	}
}

// validateTLS builds TLSConfig from TLSCert/TLSKey/TLSCaCert/TLSVerify when
// an embedder set those without one, and refuses TLS settings that would
// silently do nothing without TLS.
func validateTLS(o *Options) error {
	if o.TLSConfig == nil && (o.TLS || o.TLSVerify || o.TLSCert != "" || o.TLSKey != "" || o.TLSCaCert != "") {
		if err := overrideTLS(o); err != nil {
			return err
		}
	}
	switch {
	case o.TLSConfig == nil && (o.TLSMap || len(o.TLSPinnedCerts) > 0 || o.TLSHandshakeFirst):
		return errors.New("verify_and_map, pinned_certs and handshake_first require TLS (a tls block or TLSConfig)")
	case o.Cluster.TLSConfig == nil && len(o.Cluster.TLSPinnedCerts) > 0:
		return errors.New("cluster pinned_certs require cluster TLS")
	case o.HTTPPort != 0 && o.HTTPSPort != 0:
		return fmt.Errorf("can't specify both HTTP (%v) and HTTPs (%v) ports", o.HTTPPort, o.HTTPSPort)
	case o.HTTPSPort != 0 && o.TLSConfig == nil:
		return errors.New("TLS cert and key required for HTTPS")
	}
	return nil
}

// tlsFlags are the command-line flags that configure client TLS.
var tlsFlags = []string{"tls", "tlsverify", "tlscert", "tlskey", "tlscacert"}

// mergeTLSFlags copies the TLS flags' fields from f to o.
func mergeTLSFlags(o, f *Options, set map[string]bool) {
	if !tlsFlagged(set) {
		return
	}
	o.TLS, o.TLSVerify = f.TLS, f.TLSVerify
	o.TLSCert, o.TLSKey, o.TLSCaCert = f.TLSCert, f.TLSKey, f.TLSCaCert
}

func tlsFlagged(set map[string]bool) bool {
	for _, n := range tlsFlags {
		if set[n] {
			return true
		}
	}
	return false
}

// applyTLSFlags makes the --tls* flags win over a config file's tls block
// as in nats-server: --tls=false turns TLS off, any other TLS flag builds
// the TLS configuration from the flags alone (re-reading the files, so a
// reload picks up rotated certificates).
func applyTLSFlags(o *Options, set map[string]bool) error {
	if !tlsFlagged(set) {
		return nil
	}
	if set["tls"] && !o.TLS {
		o.TLSConfig = nil
		o.TLSVerify, o.TLSCert, o.TLSKey, o.TLSCaCert = false, "", "", ""
		return nil
	}
	return overrideTLS(o)
}

// clusterWithoutTLS drops the route TLS settings, which a reload may
// change (new routes use them), from a comparison of cluster options.
func clusterWithoutTLS(c ClusterOpts) ClusterOpts {
	c.TLSConfig, c.TLSTimeout, c.TLSPinnedCerts = nil, 0, nil
	return c
}

// setVarzTLS reports the TLS settings in /varz.
func setVarzTLS(v *Varz, o *Options) {
	v.TLSTimeout = o.TLSTimeout
	if o.TLSConfig != nil {
		v.TLSRequired = !o.AllowNonTLS
		v.TLSVerify = o.TLSConfig.ClientAuth == tls.RequireAndVerifyClientCert
	}
	if o.Cluster.TLSConfig != nil {
		v.Cluster.TLSTimeout = o.Cluster.TLSTimeout
		v.Cluster.TLSRequired, v.Cluster.TLSVerify = true, true
	}
}
