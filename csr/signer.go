package csr

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"math/bits"
	"time"
)

var (
	// ErrFailed reports a signing request that could not be signed.
	ErrFailed = errors.New("certificate signing failed")
	// ErrNotFound reports that a Cache holds no entry for a key.
	ErrNotFound = errors.New("cached certificate not found")
	// ErrMalformedCertificate reports bytes that are not a PEM certificate.
	ErrMalformedCertificate = errors.New("malformed certificate")
	// ErrPending reports a signing request that a Signer submitted but
	// that is not signed yet: a Signer that does not wait (a controller's,
	// which must not block a worker on another controller) returns it, and
	// the caller asks again, with the same Request, once the request
	// changed. It is neither a denial nor a failure.
	ErrPending = errors.New("certificate signing request pending")
)

// DeniedError reports that an approver denied a signing request.
type DeniedError struct {
	// Name is the signing request's name, when it has one.
	Name string
	// Reason is a short machine-readable reason.
	Reason string
	// Message is a human-readable explanation.
	Message string
}

func (e *DeniedError) Error() string {
	s := "certificate signing request"
	if e.Name != "" {
		s += " " + e.Name
	}
	s += " denied"
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Request asks a Signer for a certificate.
type Request struct {
	// CSR is the checked signing request.
	CSR *Checked
	// Lifetime is the requested validity. Signers may shorten it; zero
	// means the signer's default. Read NotAfter from the issued certificate.
	Lifetime time.Duration
}

// Signer issues certificates.
//
// Sign returns the PEM certificate (leaf first, then any intermediates)
// issued for r. It returns a *DeniedError when the request is denied, an
// error wrapping ErrFailed when the signer gives up on it, and the context's
// error when ctx ends first. A Signer that does not wait for its signer
// returns an error wrapping ErrPending while the request is submitted but
// not signed; Sign with the same Request later picks the same request up.
// Implementations are safe for concurrent use.
// Issue checks what Sign returns with CheckIssued, so a Signer that issues
// anything but the client certificate asked for makes Issue fail with
// ErrBadCertificate.
type Signer interface {
	Sign(ctx context.Context, r Request) ([]byte, error)
}

// Approver approves signing requests that have passed the provider's checks.
//
// Approve returns nil when the request named name is approved, or a
// *DeniedError when it refuses. Implementations are safe for concurrent use.
type Approver interface {
	Approve(ctx context.Context, name string, c *Checked) error
}

// CacheKey names a cached certificate: the ControlPlane identity of a
// consumer when Slice is empty, the identity of one ResourceSlice otherwise.
type CacheKey struct {
	ConsumerID string
	Slice      string
}

// SecretName is the name of the provider-side Secret caching the
// certificate: "liqo-remote-certificate", or "liqo-remote-certificate-<slice>".
func (k CacheKey) SecretName() string {
	if k.Slice == "" {
		return "liqo-remote-certificate"
	}
	return "liqo-remote-certificate-" + k.Slice
}

// CacheEntry is a CSR and the certificate issued for it.
type CacheEntry struct {
	CSR         []byte
	Certificate []byte
}

// Cache keeps the last certificate issued for each identity, so a repeated
// handshake with the same CSR gets the same certificate.
//
// Get returns an error wrapping ErrNotFound when nothing is cached for key.
// Put replaces the entry for key. Delete removes it and succeeds when there
// is none. Implementations are safe for concurrent use. Issue trusts no
// entry: it returns a cached certificate only when it passes CheckIssued.
type Cache interface {
	Get(ctx context.Context, key CacheKey) (CacheEntry, error)
	Put(ctx context.Context, key CacheKey, e CacheEntry) error
	Delete(ctx context.Context, key CacheKey) error
}

// Issue returns a certificate for r. When c holds a certificate issued for
// the same CSR that passes CheckIssued at now and is not yet due for
// re-signing (RenewAt: it has at least a third of its lifetime left), Issue
// returns it; a cached entry that fails the check is a
// miss, never an answer, since others may write the cache. Otherwise it asks
// s and checks the certificate s issued with CheckIssued: one that fails is
// neither cached nor returned, and Issue returns an error wrapping
// ErrBadCertificate. A certificate that passes is cached, then returned.
// An error of s, ErrPending included, is returned as it is, and nothing is
// cached: calling Issue again with the same arguments resumes.
func Issue(ctx context.Context, s Signer, c Cache, key CacheKey, r Request, now time.Time) ([]byte, error) {
	if r.CSR == nil {
		return nil, fmt.Errorf("%w: no checked CSR", ErrFailed)
	}
	e, err := c.Get(ctx, key)
	switch {
	case err == nil:
		if cert := Cached(e, r, now); cert != nil {
			return cert, nil
		}
	case !errors.Is(err, ErrNotFound):
		return nil, fmt.Errorf("reading certificate cache %s: %w", key.SecretName(), err)
	}
	cert, err := SignChecked(ctx, s, r, now)
	if err != nil {
		return nil, err
	}
	if err := c.Put(ctx, key, CacheEntry{CSR: r.CSR.PEM(), Certificate: cert}); err != nil {
		return nil, fmt.Errorf("writing certificate cache %s: %w", key.SecretName(), err)
	}
	return cert, nil
}

// Cached returns the certificate of e when Issue would return it from the
// cache for r at now: e was issued for the same CSR, passes CheckIssued and
// is not yet due for re-signing (RenewAt). It returns nil otherwise. It
// lets a caller that read the entry already (to check who holds the
// identity, say) issue without reading it again: Cached, then, on nil,
// SignChecked and Cache.Put, as Issue does.
func Cached(e CacheEntry, r Request, now time.Time) []byte {
	if r.CSR == nil || !bytes.Equal(e.CSR, r.CSR.pem) {
		return nil
	}
	if leaf, err := CheckIssued(e.Certificate, r, now); err == nil && fresh(leaf, now) {
		return e.Certificate
	}
	return nil
}

// SignChecked asks s to sign r and checks what it issued with CheckIssued:
// a certificate that fails is not returned, and the error wraps
// ErrBadCertificate. An error of s, ErrPending included, is returned as it
// is.
func SignChecked(ctx context.Context, s Signer, r Request, now time.Time) ([]byte, error) {
	if r.CSR == nil {
		return nil, fmt.Errorf("%w: no checked CSR", ErrFailed)
	}
	cert, err := s.Sign(ctx, r)
	if err != nil {
		return nil, err
	}
	if _, err := CheckIssued(cert, r, now); err != nil {
		return nil, fmt.Errorf("certificate issued for %s: %w", r.CSR.Subject().CommonName, err)
	}
	return cert, nil
}

// fresh reports whether now is after cert begins and before it is due for
// re-signing (RenewAt), when more than a third of its lifetime is left.
func fresh(cert *x509.Certificate, now time.Time) bool {
	return now.After(cert.NotBefore) && now.Before(RenewAt(cert))
}

// The window in which a provider re-signs a certificate, in fractions of its
// lifetime (RenewAt): from half of it to two thirds, the point at which
// Liqo's providers re-sign every certificate.
const (
	MinRenewFraction = 1.0 / 2
	MaxRenewFraction = 2.0 / 3
)

// RenewAt returns when a provider re-signs the certificate cert: at a
// fraction of its lifetime drawn from cert itself, between MinRenewFraction
// (included) and MaxRenewFraction (excluded), to the second. From then on
// Issue asks the signer again instead of returning cert from the cache.
//
// Certificates issued in one burst are thus re-signed over a sixth of their
// lifetime, not in one instant as at Liqo's fixed two thirds: so many
// re-signs never fall due together that they hold up the handshakes of new
// consumers. The fraction is a hash of cert's DER encoding (its signature
// included), so it is the same for the same certificate wherever and
// whenever it is read: a restarted provider, or another replica, keeps the
// schedule; each certificate issued, a renewal of the same consumer's
// included, draws its own. No consumer gains by steering it: the window
// bounds every draw, and the signer picks the serial and signs.
//
// Re-signing at two thirds at the latest keeps what Liqo's consumers, which
// never renew by themselves, rely on: a certificate handed out has at least
// a third of its lifetime left, and its successor arrives before it
// expires. A Strict consumer renews its key later, at 70–90 % (package
// renewal), and a provider signs for a new key from half the lifetime on.
func RenewAt(cert *x509.Certificate) time.Time {
	life := cert.NotAfter.Sub(cert.NotBefore)
	earliest, latest := cert.NotBefore.Add(life/2), cert.NotBefore.Add(life-life/3)
	// Whole seconds, as certificates count time: the first at or after
	// earliest, and as many after it as come before latest.
	first := earliest.Truncate(time.Second)
	if first.Before(earliest) {
		first = first.Add(time.Second)
	}
	seconds := (latest.Sub(first) + time.Second - 1) / time.Second
	if seconds <= 0 {
		return earliest
	}
	sum := sha256.Sum256(cert.Raw)
	// A uniform draw among them: the high word of seconds × (a 64-bit
	// draw / 2⁶⁴), below seconds.
	drawn, _ := bits.Mul64(uint64(seconds), binary.BigEndian.Uint64(sum[:8]))
	return first.Add(time.Duration(drawn) * time.Second)
}

// RenewFraction returns the fraction of cert's lifetime at which a provider
// re-signs it (RenewAt): at least MinRenewFraction, below MaxRenewFraction.
// It returns 0 for a certificate whose lifetime is not positive.
func RenewFraction(cert *x509.Certificate) float64 {
	life := cert.NotAfter.Sub(cert.NotBefore)
	if life <= 0 {
		return 0
	}
	return float64(RenewAt(cert).Sub(cert.NotBefore)) / float64(life)
}

// RenewSpread returns the width of the re-signing window certs use, as a
// fraction of the lifetime: the largest RenewFraction among them less the
// smallest. Certificates issued together, which Liqo's providers re-sign
// in one instant (a spread of 0), are re-signed over this share of their
// lifetime; it approaches MaxRenewFraction - MinRenewFraction as certs grow
// in number. It is 0 for fewer than two certificates.
func RenewSpread(certs []*x509.Certificate) float64 {
	if len(certs) < 2 {
		return 0
	}
	lo, hi := RenewFraction(certs[0]), RenewFraction(certs[0])
	for _, c := range certs[1:] {
		f := RenewFraction(c)
		lo, hi = min(lo, f), max(hi, f)
	}
	return hi - lo
}

// MaxCertificateSize bounds the encoded size of a certificate chain accepted
// by ParseCertificate.
const MaxCertificateSize = 64 << 10

// ParseCertificate returns the first certificate of a PEM chain.
func ParseCertificate(chain []byte) (*x509.Certificate, error) {
	if len(chain) > MaxCertificateSize {
		return nil, fmt.Errorf("%w: %d bytes exceeds %d", ErrMalformedCertificate, len(chain), MaxCertificateSize)
	}
	block, _ := pem.Decode(chain)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%w: no CERTIFICATE PEM block", ErrMalformedCertificate)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformedCertificate, err)
	}
	return cert, nil
}
