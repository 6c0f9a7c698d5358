package resourceslice

import (
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"time"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
)

// The defaults of Bounds.
const (
	// DefaultMaxSlices is how many live ResourceSlices of one consumer may
	// hold certificates. A Liqo consumer makes one slice per virtual node it
	// wants from a provider (liqoctl peer makes one, and a consumer asks
	// for more only to split a provider's resources into pools): 64 is far
	// above that, and low enough that the certificates, CSR objects and
	// bindings one consumer can make the provider keep stay few.
	DefaultMaxSlices = 64
	// DefaultCertificatesPerHour is how many certificates for new requests
	// (a new slice, or a new CSR of a slice) one consumer may have the
	// provider sign in any hour (RateWindow): twice DefaultMaxSlices, so a
	// consumer that makes all its slices, and makes them again once in the
	// same hour (an unpeer and a peer), is never held up. The Kubernetes
	// controller manager deletes issued CertificateSigningRequests after an
	// hour, so with the CSR API a consumer keeps at most this many there.
	// A re-signing of a request signed before (a renewal, which the
	// provider schedules at half to two thirds of a certificate's lifetime)
	// is not counted: it comes at most once per slice and lifetime.
	DefaultCertificatesPerHour = 2 * DefaultMaxSlices
	// RateWindow is the window Bounds.CertificatesPerHour counts in.
	RateWindow = time.Hour
)

// The bounds a ResourceSlice's certificate can be refused by, wrapped by a
// *BoundError, and ErrBound, which every *BoundError wraps too.
var (
	ErrBound = errors.New("over a per-consumer ResourceSlice bound")
	// ErrSliceLimit: the consumer has Bounds.MaxSlices live slices older
	// than this one already.
	ErrSliceLimit = errors.New("too many ResourceSlices of one consumer")
	// ErrRekeyTooSoon: the slice asks for a certificate for a new CSR
	// before Bounds.RekeyInterval has passed since the certificate the
	// provider holds for it was issued.
	ErrRekeyTooSoon = errors.New("new CSR of a ResourceSlice too soon after its last certificate")
	// ErrCertificateRate: the provider signed Bounds.CertificatesPerHour
	// new requests of the consumer in the last RateWindow.
	ErrCertificateRate = errors.New("too many ResourceSlice certificates of one consumer in an hour")
)

// BoundError reports a certificate of slice Slice that a provider does not
// sign, because of the bound Err (ErrSliceLimit, ErrRekeyTooSoon or
// ErrCertificateRate). It wraps Err and ErrBound. Nothing in it is secret.
type BoundError struct {
	Err error
	// Slice is the slice, as namespace/name.
	Slice string
	// Limit is the bound's number: Bounds.MaxSlices or
	// Bounds.CertificatesPerHour; zero for ErrRekeyTooSoon.
	Limit int
	// Until is when the certificate may be signed. For ErrSliceLimit,
	// which lasts until an older slice of the consumer goes, it is the zero
	// time, or when the provider counts the slices again.
	Until time.Time
}

func (e *BoundError) Error() string {
	var what string
	switch {
	case errors.Is(e.Err, ErrSliceLimit):
		what = fmt.Sprintf("its consumer has at least %d live ResourceSlices older than it, the most that get certificates", e.Limit)
	case errors.Is(e.Err, ErrCertificateRate):
		what = fmt.Sprintf("%d certificates for new requests of its consumer were signed in the last %s, the most allowed", e.Limit, RateWindow)
	default:
		what = "its certificate is too recent for a certificate for another CSR"
	}
	msg := fmt.Sprintf("ResourceSlice %s: %v: %s; nothing is signed", e.Slice, e.Err, what)
	if !e.Until.IsZero() {
		msg += " before " + e.Until.UTC().Format(time.RFC3339)
	}
	return msg
}

// Unwrap returns Err and ErrBound.
func (e *BoundError) Unwrap() []error { return []error{e.Err, ErrBound} }

// Bounds are the per-consumer bounds on the certificates a provider signs
// for ResourceSlices. A bound is checked only when a certificate for a
// request the provider has not signed for the slice would be signed: a
// slice that holds a certificate keeps it, gets it again, and has it
// re-signed when due, whatever the bounds.
//
// The zero value uses the defaults: DefaultMaxSlices,
// DefaultCertificatesPerHour, and half the lifetime of the certificate a
// slice holds between two of its keys (as a Renew's new key). A negative
// value removes its bound.
type Bounds struct {
	// MaxSlices is how many live slices of a consumer, the oldest first
	// (by creationTimestamp, which the API server sets, then name), may
	// get a certificate: a slice with MaxSlices older live slices beside it
	// gets none until some go.
	MaxSlices int
	// RekeyInterval is the shortest time from a certificate the provider
	// holds for a slice, counted from its NotBefore, to a certificate for
	// another CSR of that slice. Zero means half that certificate's
	// lifetime.
	RekeyInterval time.Duration
	// CertificatesPerHour is how many certificates for new requests (a
	// slice's first CSR, or another CSR of it) of one consumer are signed
	// in any RateWindow.
	CertificatesPerHour int
}

// WithDefaults returns b with its zero counts set to their defaults
// (RekeyInterval keeps zero, which is a rule of its own).
func (b Bounds) WithDefaults() Bounds {
	if b.MaxSlices == 0 {
		b.MaxSlices = DefaultMaxSlices
	}
	if b.CertificatesPerHour == 0 {
		b.CertificatesPerHour = DefaultCertificatesPerHour
	}
	return b
}

// Signing is what Bounds.Admit judges: a certificate for a request that
// the provider has not signed for slice Slice. Every field is the
// provider's own record or the API server's, never one the consumer
// writes.
type Signing struct {
	// Slice is the slice asking; its name, namespace and
	// creationTimestamp are read.
	Slice *authv1beta1.ResourceSlice
	// Live are the slices in Slice's namespace (resourceslice.Store's
	// List); slices being deleted, and Slice itself, are skipped. Read
	// only when Held is nil and MaxSlices bounds.
	Live []authv1beta1.ResourceSlice
	// Held is the certificate the provider holds for Slice, issued for
	// another CSR; nil when it holds none (a new slice).
	Held *x509.Certificate
	// Issued are the times the provider signed, or asked its signer to
	// sign, new requests of the consumer; those before Now-RateWindow are
	// not counted.
	Issued []time.Time
	// Now is the time of the decision.
	Now time.Time
}

// Admit returns nil when the certificate s asks for may be signed, else a
// *BoundError naming the first bound it is over: the slice count (for a
// slice that holds no certificate), the time between two keys (for one that
// holds one), the rate.
func (b Bounds) Admit(s Signing) error {
	b = b.WithDefaults()
	for _, check := range []func(Bounds, Signing) error{checkSliceLimit, checkRekey, checkRate} {
		if err := check(b, s); err != nil {
			return err
		}
	}
	return nil
}

// checkSliceLimit refuses a slice that holds no certificate when
// MaxSlices live slices of its consumer are older than it.
func checkSliceLimit(b Bounds, s Signing) error {
	if s.Held != nil || b.MaxSlices < 0 {
		return nil
	}
	older := 0
	for i := range s.Live {
		o := &s.Live[i]
		if o.Name == s.Slice.Name || o.DeletionTimestamp != nil || !createdBefore(o, s.Slice) {
			continue
		}
		older++
	}
	if older < b.MaxSlices {
		return nil
	}
	return &BoundError{Err: ErrSliceLimit, Slice: s.Slice.Namespace + "/" + s.Slice.Name, Limit: b.MaxSlices}
}

// createdBefore orders slices by creationTimestamp, then name.
func createdBefore(a, b *authv1beta1.ResourceSlice) bool {
	ta, tb := a.CreationTimestamp.Time, b.CreationTimestamp.Time
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	return a.Name < b.Name
}

// checkRekey refuses a certificate for another CSR of a slice before
// RekeyInterval (or half its lifetime) from the NotBefore of the
// certificate held for it, while that certificate is valid.
func checkRekey(b Bounds, s Signing) error {
	if s.Held == nil || b.RekeyInterval < 0 {
		return nil
	}
	until := s.Held.NotBefore.Add(s.Held.NotAfter.Sub(s.Held.NotBefore) / 2)
	if b.RekeyInterval > 0 {
		until = s.Held.NotBefore.Add(b.RekeyInterval)
	}
	if !s.Now.Before(until) || !s.Now.Before(s.Held.NotAfter) {
		return nil
	}
	return &BoundError{Err: ErrRekeyTooSoon, Slice: s.Slice.Namespace + "/" + s.Slice.Name, Until: until}
}

// checkRate refuses a certificate when CertificatesPerHour new requests of
// the consumer were signed in the RateWindow before Now.
func checkRate(b Bounds, s Signing) error {
	if b.CertificatesPerHour < 0 {
		return nil
	}
	from := s.Now.Add(-RateWindow)
	var in []time.Time
	for _, t := range s.Issued {
		if t.After(from) {
			in = append(in, t)
		}
	}
	if len(in) < b.CertificatesPerHour {
		return nil
	}
	// Below the bound again once all but CertificatesPerHour-1 of them
	// have left the window.
	slices.SortFunc(in, time.Time.Compare)
	return &BoundError{Err: ErrCertificateRate, Slice: s.Slice.Namespace + "/" + s.Slice.Name,
		Limit: b.CertificatesPerHour, Until: in[len(in)-b.CertificatesPerHour].Add(RateWindow)}
}
