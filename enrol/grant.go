package enrol

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"

	"golang.org/x/crypto/cryptobyte"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
)

var (
	// ErrBadGrant reports a grant that no committed enrolment key signed,
	// or that is for another provider, consumer or request.
	ErrBadGrant = errors.New("grant does not verify")
	// ErrCAPin reports a grant whose CA holds no certificate with the key
	// the consumer pinned (TrustedProvider.spec.caSHA256).
	ErrCAPin = errors.New("the provider's CA does not match the pinned one")
)

// NewGrant returns the grant of identity id (as a provider's Accept
// returns it) for request r, signed with the enrolment key key.
func NewGrant(rand io.Reader, key crypto.Signer, r *Request, id *authv1beta1.Identity) (*peeringv1alpha1.Grant, error) {
	ns := ""
	if id.Spec.Namespace != nil {
		ns = *id.Spec.Namespace
	}
	a := id.Spec.AuthParams
	g := &peeringv1alpha1.Grant{
		ProviderID: r.ProviderID, ConsumerID: r.ConsumerID, CSRSHA256: r.CSRSHA256(), Namespace: ns,
		APIServer: a.APIServer, CA: bytes.Clone(a.CA), Certificate: bytes.Clone(a.SignedCRT), ProxyURL: a.ProxyURL,
	}
	var err error
	if g.Signature, err = keys.SignMessage(rand, key, grantTranscript(g)); err != nil {
		return nil, err
	}
	return g, nil
}

// grantTranscript returns the canonical bytes a grant's signature covers:
// the context, the version, then every field but the signature,
// length-prefixed, the proxy URL after a presence byte.
func grantTranscript(g *peeringv1alpha1.Grant) []byte {
	var b cryptobyte.Builder
	addString(&b, GrantContext)
	b.AddUint8(Version)
	for _, s := range []string{g.ProviderID, g.ConsumerID, g.CSRSHA256, g.Namespace, g.APIServer} {
		addString(&b, s)
	}
	for _, p := range [][]byte{g.CA, g.Certificate} {
		b.AddUint24LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(p) })
	}
	if g.ProxyURL == nil {
		b.AddUint8(0)
	} else {
		b.AddUint8(1)
		addString(&b, *g.ProxyURL)
	}
	out, err := b.Bytes()
	if err != nil {
		return nil // a field too long for its prefix: signs and verifies nothing
	}
	return out
}

// Trust is what a consumer committed about one provider
// (TrustedProvider), and what it asked: the grant must match all of it.
type Trust struct {
	ProviderID string
	ConsumerID string
	// EnrolmentKeys are the provider's committed enrolment keys.
	EnrolmentKeys []crypto.PublicKey
	// CASHA256 is the pin of the provider API server's CA: "sha256:" and
	// the hex SHA-256 of a CA certificate's SubjectPublicKeyInfo.
	CASHA256 string
	// Request is the request the consumer made.
	Request *Request
}

// VerifyGrant checks g against t: signed by one of t's enrolment keys,
// for t's provider, consumer and request, and with a CA that t's pin
// names. It returns the Identity g carries, which the consumer then
// checks against its CSR's key as it checks any (consumer.Apply).
func VerifyGrant(g *peeringv1alpha1.Grant, t Trust) (*authv1beta1.Identity, error) {
	if g == nil || t.Request == nil {
		return nil, fmt.Errorf("%w: no grant, or no request to check it against", ErrBadGrant)
	}
	msg := grantTranscript(g)
	signed := false
	for _, k := range t.EnrolmentKeys {
		if msg != nil && keys.VerifyMessage(k, msg, g.Signature) == nil {
			signed = true
			break
		}
	}
	switch {
	case !signed:
		return nil, fmt.Errorf("%w: no committed enrolment key of %s signed it", ErrBadGrant, t.ProviderID)
	case g.ProviderID != t.ProviderID || g.ConsumerID != t.ConsumerID:
		return nil, fmt.Errorf("%w: made for %s by %s", ErrBadGrant, g.ConsumerID, g.ProviderID)
	case subtle.ConstantTimeCompare([]byte(g.CSRSHA256), []byte(t.Request.CSRSHA256())) != 1:
		return nil, fmt.Errorf("%w: made for another request", ErrBadGrant)
	case g.Namespace != clusterid.TenantNamespace(t.ConsumerID):
		return nil, fmt.Errorf("%w: namespace %q is not the tenant namespace", ErrBadGrant, g.Namespace)
	}
	if err := CheckCAPin(g.CA, t.CASHA256); err != nil {
		return nil, err
	}
	return identity.Build(g.ProviderID, authv1beta1.AuthParams{
		CA: bytes.Clone(g.CA), SignedCRT: bytes.Clone(g.Certificate), APIServer: g.APIServer, ProxyURL: g.ProxyURL,
	}, &identity.BuildOptions{TenantNamespace: g.Namespace})
}

// CAPin returns the pin of the first certificate of the PEM bundle ca, as
// TrustedProvider.spec.caSHA256 takes it.
func CAPin(ca []byte) (string, error) {
	certs, err := parseCerts(ca)
	if err != nil {
		return "", err
	}
	return pin(certs[0]), nil
}

func pin(c *x509.Certificate) string {
	sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// CheckCAPin returns nil when a certificate of the PEM bundle ca has the
// pinned key, and an error wrapping ErrCAPin otherwise.
func CheckCAPin(ca []byte, want string) error {
	certs, err := parseCerts(ca)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCAPin, err)
	}
	for _, c := range certs {
		if subtle.ConstantTimeCompare([]byte(pin(c)), []byte(want)) == 1 {
			return nil
		}
	}
	return fmt.Errorf("%w: none of its %d certificates has the pinned key", ErrCAPin, len(certs))
}

func parseCerts(bundle []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for rest := bundle; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no PEM certificate", ErrMalformed)
	}
	return out, nil
}
