package server

// verify_and_map: a client's certificate names its user. As in nats-server
// the candidates are tried in order: e-mail SANs, DNS SANs, URI SANs, then
// the subject's distinguished name (as Go prints the RDN sequence, with
// domain components appended when present, and as a DN compared attribute
// by attribute, in any RDN order). The user needs no password.

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"slices"
	"strings"
)

var oidDomainComponent = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}

// checkCertUser binds the client to the user its certificate maps to.
func (s *Server) checkCertUser(a *authConfig, cert *x509.Certificate) (binding, bool) {
	if cert == nil {
		return binding{}, false
	}
	u := certUser(a.users, cert)
	if u == nil {
		return binding{}, false
	}
	return binding{acc: s.accountOf(u.Account), user: u.Username, perms: u.Permissions}, true
}

// certUser finds the user a certificate maps to, nil when none.
func certUser(users map[string]*User, cert *x509.Certificate) *User {
	var names []string
	names = append(names, cert.EmailAddresses...)
	names = append(names, cert.DNSNames...)
	for _, u := range cert.URIs {
		names = append(names, u.String())
	}
	rdn := cert.Subject.ToRDNSequence().String()
	if dcs := domainComponents(cert.RawSubject); dcs != "" {
		names = append(names, rdn+","+dcs)
	}
	names = append(names, rdn)
	for _, n := range names {
		if u, ok := users[n]; ok && n != "" {
			return u
		}
	}
	// A user named by a DN written in another order or spacing.
	certDN := dnAttributes(rdn)
	if len(certDN) == 0 {
		return nil
	}
	for name, u := range users {
		if dn := dnAttributes(name); len(dn) > 0 && slices.Equal(dn, certDN) {
			return u
		}
	}
	return nil
}

// domainComponents renders the subject's DC attributes ("DC=a,DC=b"),
// which Go's RDN printing leaves out.
func domainComponents(raw []byte) string {
	var seq pkix.RDNSequence
	if _, err := asn1.Unmarshal(raw, &seq); err != nil {
		return ""
	}
	var dcs []string
	for i := len(seq) - 1; i >= 0; i-- {
		for _, atv := range seq[i] {
			if v, ok := atv.Value.(string); ok && atv.Type.Equal(oidDomainComponent) {
				dcs = append(dcs, "DC="+v)
			}
		}
	}
	return strings.Join(dcs, ",")
}

// dnAttributes splits a DN string into sorted "TYPE=value" attributes
// (types upper-cased, spaces around separators dropped, escapes kept), or
// nil when it does not look like a DN.
func dnAttributes(dn string) []string {
	var attrs []string
	start, esc := 0, false
	add := func(part string) bool {
		typ, val, ok := strings.Cut(part, "=")
		typ, val = strings.TrimSpace(typ), strings.TrimSpace(val)
		if !ok || typ == "" {
			return false
		}
		attrs = append(attrs, strings.ToUpper(typ)+"="+val)
		return true
	}
	for i := 0; i < len(dn); i++ {
		switch {
		case esc:
			esc = false
		case dn[i] == '\\':
			esc = true
		case dn[i] == ',' || dn[i] == '+' || dn[i] == ';':
			if !add(dn[start:i]) {
				return nil
			}
			start = i + 1
		}
	}
	if !add(dn[start:]) {
		return nil
	}
	slices.Sort(attrs)
	return attrs
}
