package csr

import (
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kubepact/kubepact/keys"
)

// ErrBadCertificate reports a certificate, issued by a Signer or read from a
// Cache, that is not the client certificate a Request asks for.
var ErrBadCertificate = errors.New("issued certificate does not match the request")

const (
	// IssuedSkew is how far after the time of the request an issued
	// certificate may begin, and how far beyond the requested end it may
	// end. It absorbs clock skew between the provider and its signer and the
	// time signing takes.
	IssuedSkew = 5 * time.Minute
	// minIssuedLifetime is the shortest lifetime the Kubernetes CSR API
	// issues: its signer raises shorter requests to ten minutes.
	minIssuedLifetime = 10 * time.Minute
	// clientKeyUsages are the key usages a client certificate may carry:
	// those kubernetes.io/kube-apiserver-client allows beside client auth.
	clientKeyUsages = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
)

// CheckIssued checks that the PEM chain is the client certificate r asks
// for, as issued at now or earlier, and returns its leaf. The leaf must:
//
//   - be for the public key of r.CSR;
//   - carry exactly one common name, the CSR's, and exactly the CSR's
//     organizations, and no subject alternative name;
//   - have client auth as its only extended key usage, no key usage beyond
//     digital signature and key encipherment, and not be a CA;
//   - be valid at now, with NotBefore no later than now + IssuedSkew;
//   - end no later than now + r.Lifetime + IssuedSkew. A zero Lifetime is
//     checked as DefaultMaxLifetime, the signers' default, and one shorter
//     than ten minutes as ten minutes, the shortest Kubernetes issues.
//
// NotAfter is bounded from the time of the request, not from NotBefore:
// signers backdate NotBefore and may shorten, never lengthen, the lifetime.
// CheckIssued looks at the leaf alone; it does not verify the chain to a CA.
// Every error it returns wraps ErrBadCertificate.
func CheckIssued(chain []byte, r Request, now time.Time) (*x509.Certificate, error) {
	if r.CSR == nil {
		return nil, fmt.Errorf("%w: no checked CSR", ErrBadCertificate)
	}
	leaf, err := ParseCertificate(chain)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadCertificate, err)
	}
	if err := checkLeaf(leaf, r, now); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrBadCertificate, err)
	}
	return leaf, nil
}

// checkLeaf returns why leaf is not the certificate r asks for at now.
func checkLeaf(leaf *x509.Certificate, r Request, now time.Time) error {
	c := r.CSR
	if !keys.Equal(leaf.PublicKey, c.PublicKey()) {
		return fmt.Errorf("certificate for key %s, want %s", keys.Fingerprint(leaf.PublicKey), keys.Fingerprint(c.PublicKey()))
	}
	want := c.Subject()
	cns := 0
	for _, atv := range leaf.Subject.Names {
		if atv.Type.Equal(oidCommonName) {
			cns++
		}
	}
	if leaf.Subject.CommonName != want.CommonName || cns != 1 {
		return fmt.Errorf("common name %q (%d), want exactly %q", leaf.Subject.CommonName, cns, want.CommonName)
	}
	if !slices.Equal(leaf.Subject.Organization, want.Organization) {
		return fmt.Errorf("organizations %q, want exactly %q", leaf.Subject.Organization, want.Organization)
	}
	if n := len(leaf.DNSNames) + len(leaf.IPAddresses) + len(leaf.EmailAddresses) + len(leaf.URIs); n > 0 {
		return fmt.Errorf("%d subject alternative names, want none", n)
	}
	if !slices.Equal(leaf.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) || len(leaf.UnknownExtKeyUsage) > 0 {
		return fmt.Errorf("extended key usages %v and %d unknown, want exactly client auth", leaf.ExtKeyUsage, len(leaf.UnknownExtKeyUsage))
	}
	if leaf.IsCA {
		return errors.New("a CA certificate")
	}
	if extra := leaf.KeyUsage &^ clientKeyUsages; extra != 0 {
		return fmt.Errorf("key usages %#x beyond digital signature and key encipherment", int(extra))
	}
	if leaf.NotBefore.After(now.Add(IssuedSkew)) {
		return fmt.Errorf("valid from %s, more than %s after %s", leaf.NotBefore.UTC().Format(time.RFC3339), IssuedSkew, now.UTC().Format(time.RFC3339))
	}
	if !leaf.NotAfter.After(now) {
		return fmt.Errorf("expired at %s, not after %s", leaf.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	lifetime := r.Lifetime
	if lifetime <= 0 {
		lifetime = DefaultMaxLifetime
	}
	lifetime = max(lifetime, minIssuedLifetime)
	if latest := now.Add(lifetime + IssuedSkew); leaf.NotAfter.After(latest) {
		return fmt.Errorf("valid until %s, beyond the %s allowed (until %s)",
			leaf.NotAfter.UTC().Format(time.RFC3339), lifetime, latest.UTC().Format(time.RFC3339))
	}
	return nil
}
