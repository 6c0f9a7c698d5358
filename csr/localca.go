package csr

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"time"

	"k8s.io/utils/clock"

	"github.com/kubepact/kubepact/keys"
)

const (
	// DefaultMaxLifetime caps certificates of a LocalCA unless configured
	// otherwise; it matches kube-controller-manager's default signing duration.
	DefaultMaxLifetime = 365 * 24 * time.Hour
	// backdate is how far NotBefore is set in the past to absorb clock skew,
	// as Kubernetes' signer does.
	backdate = 5 * time.Minute
)

// LocalCAOptions tunes a LocalCA. The zero value, like a nil pointer, uses the
// real clock, crypto/rand.Reader, no approver (every checked request is
// approved) and DefaultMaxLifetime.
type LocalCAOptions struct {
	Clock       clock.PassiveClock
	Rand        io.Reader
	Approver    Approver
	MaxLifetime time.Duration
}

// LocalCA is a Signer that signs client certificates with a CA key held in
// memory. It serves clusters whose API server does not sign CSRs, trusting a
// CA that the API server's --client-ca-file also names, and it serves tests.
type LocalCA struct {
	cert    *x509.Certificate
	certPEM []byte
	key     crypto.Signer
	opts    LocalCAOptions
}

var _ Signer = (*LocalCA)(nil)

// NewLocalCA returns a LocalCA that signs with key under the PEM CA
// certificate certPEM.
func NewLocalCA(certPEM []byte, key crypto.Signer, opts *LocalCAOptions) (*LocalCA, error) {
	cert, err := ParseCertificate(certPEM)
	if err != nil {
		return nil, fmt.Errorf("local CA: %w", err)
	}
	if !cert.IsCA || !keys.Equal(cert.PublicKey, key.Public()) {
		return nil, fmt.Errorf("local CA: %w: not a CA certificate for the given key", ErrMalformedCertificate)
	}
	ca := &LocalCA{cert: cert, certPEM: bytes.Clone(certPEM), key: key}
	if opts != nil {
		ca.opts = *opts
	}
	if ca.opts.Clock == nil {
		ca.opts.Clock = clock.RealClock{}
	}
	if ca.opts.Rand == nil {
		ca.opts.Rand = rand.Reader
	}
	if ca.opts.MaxLifetime <= 0 {
		ca.opts.MaxLifetime = DefaultMaxLifetime
	}
	return ca, nil
}

// GenerateCA returns a new self-signed Ed25519 CA certificate valid for
// lifetime from now, and its key.
func GenerateCA(r io.Reader, commonName string, now time.Time, lifetime time.Duration) ([]byte, *keys.PrivateKey, error) {
	key, err := keys.Generate(r, keys.Ed25519)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(lifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(r, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("creating CA certificate: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key, nil
}

// Certificate returns the CA certificate in PEM.
func (ca *LocalCA) Certificate() []byte { return bytes.Clone(ca.certPEM) }

// Sign issues a client certificate for r after the approver, if any, approves
// it. The certificate is backdated by five minutes and ends at the earliest
// of the requested lifetime, the CA's MaxLifetime and the CA's own NotAfter.
func (ca *LocalCA) Sign(ctx context.Context, r Request) ([]byte, error) {
	if r.CSR == nil {
		return nil, fmt.Errorf("%w: no checked CSR", ErrFailed)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if ca.opts.Approver != nil {
		sum := sha256.Sum256(r.CSR.pem)
		if err := ca.opts.Approver.Approve(ctx, "local-"+hex.EncodeToString(sum[:8]), r.CSR); err != nil {
			return nil, err
		}
	}
	now := ca.opts.Clock.Now()
	lifetime := r.Lifetime
	if lifetime <= 0 || lifetime > ca.opts.MaxLifetime {
		lifetime = ca.opts.MaxLifetime
	}
	notAfter := now.Add(lifetime)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	serial, err := rand.Int(ca.opts.Rand, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("%w: serial number: %w", ErrFailed, err)
	}
	usage := x509.KeyUsageDigitalSignature
	if _, ok := r.CSR.req.PublicKey.(*rsa.PublicKey); ok {
		usage |= x509.KeyUsageKeyEncipherment
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               r.CSR.req.Subject,
		NotBefore:             now.Add(-backdate),
		NotAfter:              notAfter,
		KeyUsage:              usage,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(ca.opts.Rand, tmpl, ca.cert, r.CSR.req.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFailed, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// String names the CA, never its key.
func (ca *LocalCA) String() string {
	if ca == nil || ca.cert == nil {
		return "csr.LocalCA(<nil>)"
	}
	return fmt.Sprintf("csr.LocalCA(%s, until %s)", ca.cert.Subject.CommonName, ca.cert.NotAfter.UTC().Format(time.RFC3339))
}

// GoString is String.
func (ca *LocalCA) GoString() string { return ca.String() }

// Format makes every fmt verb print String: the CA key stays out of logs.
func (ca *LocalCA) Format(f fmt.State, _ rune) { io.WriteString(f, ca.String()) }
