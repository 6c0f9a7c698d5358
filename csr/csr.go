// Package csr builds the consumer's certificate signing requests, checks them
// against the provider's policy, and gets them signed.
//
// A ControlPlane identity asks for CN = consumer cluster ID and O = exactly
// "liqo.io". A ResourceSlice identity asks for CN = "<slice>-<first 12 hex
// characters of sha256(consumer ID)>" and O = the consumer cluster ID.
//
// # Security
//
// Check is the provider's policy and is strict where Liqo is lax: the subject
// must carry exactly the expected CN and exactly one expected O (so no extra
// groups, no "system:masters", no "system:" group), no SAN of any kind, a
// valid self-signature, an accepted key (Ed25519 of large order, ECDSA
// P-256/P-384, RSA of 2048 to 4096 bits; see keys.Check) and, when the policy
// names one, exactly the expected public key. Only Check makes a *Checked,
// and Signers take only a *Checked, so an unchecked request cannot reach a
// signer through this package.
//
// Issue checks every certificate, fresh from a Signer or read from a Cache
// (a Secret others may write), with CheckIssued before it caches or
// returns it.
//
// # Errors
//
// Check wraps one of ErrMalformed, ErrSignature, ErrCommonName,
// ErrOrganization, ErrSAN, ErrKeyMismatch, or, for the request's key,
// keys.ErrMalformed (an Ed25519 key that is not a point on the curve),
// ErrUnsupported, ErrWeak or ErrWeakKey. Signers return *DeniedError when a request is denied and
// wrap ErrFailed when signing fails. CheckIssued, and Issue for a
// certificate its Signer issued, wrap ErrBadCertificate when the
// certificate is not the client certificate asked for: for another key or
// subject, with a usage beyond client auth, a CA, not valid now, or valid
// beyond the requested lifetime. A cached certificate that fails the check
// is signed again, not an error.
package csr

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/kubepact/kubepact/keys"
)

// ControlPlaneOrganization is the only O a ControlPlane CSR may carry.
const ControlPlaneOrganization = "liqo.io"

// MaxSize bounds the encoded size of a CSR accepted by Check.
const MaxSize = 16 << 10

const pemType = "CERTIFICATE REQUEST"

var (
	oidSubjectAltName = asn1.ObjectIdentifier{2, 5, 29, 17}
	oidCommonName     = asn1.ObjectIdentifier{2, 5, 4, 3}
)

var (
	// ErrMalformed reports bytes that are not one PEM certificate request.
	ErrMalformed = errors.New("malformed certificate signing request")
	// ErrSignature reports a CSR whose self-signature does not verify.
	ErrSignature = errors.New("certificate signing request signature does not verify")
	// ErrCommonName reports a CSR for the wrong common name.
	ErrCommonName = errors.New("certificate signing request has the wrong common name")
	// ErrOrganization reports a CSR whose organizations are not exactly the
	// expected one.
	ErrOrganization = errors.New("certificate signing request has the wrong organizations")
	// ErrSAN reports a CSR that carries a subject alternative name.
	ErrSAN = errors.New("certificate signing request has subject alternative names")
	// ErrKeyMismatch reports a CSR for another key than the expected one.
	ErrKeyMismatch = errors.New("certificate signing request is for another key")
)

// ControlPlaneSubject is the subject of a consumer's ControlPlane identity.
func ControlPlaneSubject(consumerID string) pkix.Name {
	return pkix.Name{CommonName: consumerID, Organization: []string{ControlPlaneOrganization}}
}

// ResourceSliceSubject is the subject of the identity of one ResourceSlice.
func ResourceSliceSubject(consumerID, sliceName string) pkix.Name {
	sum := sha256.Sum256([]byte(consumerID))
	return pkix.Name{
		CommonName:   sliceName + "-" + hex.EncodeToString(sum[:])[:12],
		Organization: []string{consumerID},
	}
}

// Create returns a PEM CSR for subject, signed by key. r supplies randomness
// where the key type needs it.
func Create(r io.Reader, key crypto.Signer, subject pkix.Name) ([]byte, error) {
	der, err := x509.CreateCertificateRequest(r, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		return nil, fmt.Errorf("creating certificate signing request: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemType, Bytes: der}), nil
}

// Policy is what a provider accepts in a CSR.
type Policy struct {
	// CommonName is the exact common name required.
	CommonName string
	// Organization is the one organization required.
	Organization string
	// PublicKey, when not nil, is the key the CSR must be for.
	PublicKey crypto.PublicKey
}

// ControlPlanePolicy accepts the ControlPlane CSR of consumerID for pub.
func ControlPlanePolicy(consumerID string, pub crypto.PublicKey) Policy {
	s := ControlPlaneSubject(consumerID)
	return Policy{CommonName: s.CommonName, Organization: s.Organization[0], PublicKey: pub}
}

// ResourceSlicePolicy accepts the CSR of slice sliceName of consumerID for pub.
func ResourceSlicePolicy(consumerID, sliceName string, pub crypto.PublicKey) Policy {
	s := ResourceSliceSubject(consumerID, sliceName)
	return Policy{CommonName: s.CommonName, Organization: s.Organization[0], PublicKey: pub}
}

// Checked is a CSR that passed Check. Only Check makes one.
type Checked struct {
	pem []byte
	req *x509.CertificateRequest
}

// PEM returns the CSR as it was checked.
func (c *Checked) PEM() []byte { return bytes.Clone(c.pem) }

// Subject returns the CSR's subject.
func (c *Checked) Subject() pkix.Name { return c.req.Subject }

// PublicKey returns the key the CSR is for.
func (c *Checked) PublicKey() crypto.PublicKey { return c.req.PublicKey }

// Check parses a PEM CSR and applies p to it.
func Check(pemBytes []byte, p Policy) (*Checked, error) {
	if len(pemBytes) > MaxSize {
		return nil, fmt.Errorf("%w: %d bytes exceeds %d", ErrMalformed, len(pemBytes), MaxSize)
	}
	block, rest := pem.Decode(pemBytes)
	if block == nil || block.Type != pemType || len(bytes.TrimSpace(rest)) != 0 {
		return nil, fmt.Errorf("%w: want exactly one %q PEM block", ErrMalformed, pemType)
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if err := keys.Check(req.PublicKey); err != nil {
		return nil, fmt.Errorf("certificate signing request key: %w", err)
	}
	if req.Subject.CommonName != p.CommonName {
		return nil, fmt.Errorf("%w: %q, want %q", ErrCommonName, req.Subject.CommonName, p.CommonName)
	}
	// Go keeps only the last CN in Subject.CommonName; a signer that copies
	// the raw subject would issue all of them.
	cns := 0
	for _, atv := range req.Subject.Names {
		if atv.Type.Equal(oidCommonName) {
			cns++
		}
	}
	if cns > 1 {
		return nil, fmt.Errorf("%w: %d common names, want exactly one", ErrCommonName, cns)
	}
	if !slices.Equal(req.Subject.Organization, []string{p.Organization}) {
		return nil, fmt.Errorf("%w: %q, want exactly [%q]", ErrOrganization, req.Subject.Organization, p.Organization)
	}
	if n := len(req.DNSNames) + len(req.IPAddresses) + len(req.EmailAddresses) + len(req.URIs); n > 0 {
		return nil, fmt.Errorf("%w: %d found, none allowed", ErrSAN, n)
	}
	// Go parses only four SAN types; otherName, directoryName and the rest
	// stay in Extensions, and a signer that copies extensions would issue them.
	for _, ext := range req.Extensions {
		if ext.Id.Equal(oidSubjectAltName) {
			return nil, fmt.Errorf("%w: subject alternative name extension present", ErrSAN)
		}
	}
	if p.PublicKey != nil && !keys.Equal(p.PublicKey, req.PublicKey) {
		return nil, fmt.Errorf("%w: CSR key %s, want %s", ErrKeyMismatch, keys.Fingerprint(req.PublicKey), keys.Fingerprint(p.PublicKey))
	}
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSignature, err)
	}
	return &Checked{pem: bytes.Clone(pemBytes), req: req}, nil
}
