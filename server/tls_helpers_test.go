package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testCA is a certificate authority made at test time; its certificates
// and keys are PEM files in a temporary directory.
type testCA struct {
	t      testing.TB
	dir    string
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	caFile string
	serial int64
}

// certSpec describes a certificate to issue.
type certSpec struct {
	serial  int64
	subject pkix.Name
	dns     []string
	ips     []net.IP
	emails  []string
	server  bool // a server certificate for 127.0.0.1 and localhost
	client  bool
}

// issued is a certificate and its key on disk.
type issued struct {
	certFile, keyFile string
	cert              *x509.Certificate
}

func newTestCA(t testing.TB, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &testCA{t: t, dir: t.TempDir(), cert: cert, key: key, serial: 100}
	ca.caFile = filepath.Join(ca.dir, "ca.pem")
	writePEM(t, ca.caFile, "CERTIFICATE", der)
	return ca
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// issue signs a certificate; files are named after name.
func (ca *testCA) issue(name string, spec certSpec) *issued {
	t := ca.t
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if spec.serial == 0 {
		ca.serial++
		spec.serial = ca.serial
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(spec.serial), Subject: spec.subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, DNSNames: spec.dns, IPAddresses: spec.ips,
		EmailAddresses: spec.emails,
	}
	if spec.server {
		tmpl.DNSNames = append(tmpl.DNSNames, "localhost")
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP("127.0.0.1"))
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if spec.client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	out := &issued{certFile: filepath.Join(ca.dir, name+"-cert.pem"), keyFile: filepath.Join(ca.dir, name+"-key.pem")}
	writePEM(t, out.certFile, "CERTIFICATE", der)
	writePEM(t, out.keyFile, "EC PRIVATE KEY", kder)
	out.cert, _ = x509.ParseCertificate(der)
	return out
}

// serverCert issues a certificate for 127.0.0.1/localhost usable by both
// ends of a route (server and client auth).
func (ca *testCA) serverCert(name string) *issued {
	return ca.issue(name, certSpec{subject: pkix.Name{CommonName: name}, server: true, client: true})
}

func (ca *testCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// clientTLS is a client configuration trusting ca, presenting cert if set.
func (ca *testCA) clientTLS(cert *issued) *tls.Config {
	cfg := &tls.Config{RootCAs: ca.pool(), MinVersion: tls.VersionTLS12}
	if cert != nil {
		kp, err := tls.LoadX509KeyPair(cert.certFile, cert.keyFile)
		if err != nil {
			ca.t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{kp}
	}
	return cfg
}

// writeConf writes a config file with %NAME% placeholders replaced.
func writeConf(t testing.TB, text string, vars map[string]string) string {
	t.Helper()
	for k, v := range vars {
		text = strings.ReplaceAll(text, "%"+k+"%", v)
	}
	p := filepath.Join(t.TempDir(), "server.conf")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// confOptions loads a config file into options for an in-process test
// server on random ports.
func confOptions(t testing.TB, path string) *Options {
	t.Helper()
	o, err := ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	o.Host, o.Port, o.NoSigs, o.NoLog = "127.0.0.1", RANDOM_PORT, true, true
	return o
}
