// Package tenant builds the consumer's Tenant and verifies it on the provider.
//
// The consumer calls Build with its cluster ID, its cluster key and the
// provider's nonce: the result carries the public key (PKIX PEM), the
// signature over the nonce and a ControlPlane CSR. The provider calls
// Validate, which needs no nonce and changes nothing, then redeems the nonce
// (see nonce.Redeem) and calls Verify.
//
// Each cluster keeps the objects of a remote cluster in the tenant namespace
// "liqo-tenant-<remote cluster ID>" (see Namespace), labelled for it;
// CheckNamespace tells such a namespace from one that merely has the name.
//
// # Errors
//
// Validate and Verify return a *FieldError naming the field that failed and
// wrapping the cause: clusterid.ErrInvalid, keys.ErrMalformed,
// keys.ErrUnsupported, keys.ErrWeak, keys.ErrBadSignature, nonce errors, one
// of the csr Err values, ErrInvalidProxyURL, ErrTranscriptMissing,
// ErrTranscriptMismatch or ErrTranscriptExpired; Verified.Recheck returns
// the *FieldError wrapping ErrTranscriptExpired that Verify would. Build wraps
// clusterid.ErrInvalid, ErrInvalidProxyURL or ErrInvalidOptions.
// CheckNamespace returns a *NamespaceError, which wraps
// ErrNotTenantNamespace, or wraps clusterid.ErrInvalid.
//
// # Security
//
// Liqo's consumer signs only the nonce. Build adds, when given the
// provider's ID, a signed transcript of the handshake (see Transcript) that
// binds the Tenant to that provider, the nonce, the exact CSR and an expiry,
// so a Tenant replayed to another provider, with another CSR or late is
// refused. Under the Compatible policy a Tenant without a transcript (from a
// Liqo consumer) is accepted, and one with a transcript must pass it; the
// Strict policy requires it. A verified transcript also lets the CSR be for
// a fresh per-identity key, so the cluster key never becomes a TLS key.
//
// A namespace named "liqo-tenant-<ID>" proves nothing: anyone allowed to
// create namespaces can make one. CheckNamespace also requires the
// tenant-namespace labels, which only whoever created the namespace for a
// peer (kubepact, Liqo, liqoctl, an administrator) sets; an admission
// policy keeps others from setting them.
package tenant

import (
	"crypto"
	"errors"
	"fmt"
	"io"
	"net/url"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/nonce"
)

const (
	// NamespaceLabel marks a tenant namespace.
	NamespaceLabel = "liqo.io/tenant-namespace"
	// Finalizer is the finalizer a provider puts on Tenants it serves.
	Finalizer = "tenant.liqo.io/finalizer"
	// MaxSignatureSize bounds Tenant.spec.signature (an RSA-8192 signature).
	MaxSignatureSize = 1024
)

var (
	// ErrInvalidProxyURL reports a proxy URL that is not an absolute http
	// or https URL.
	ErrInvalidProxyURL = errors.New("invalid proxy URL")
	// ErrInvalidOptions reports BuildOptions that do not fit together.
	ErrInvalidOptions = errors.New("invalid tenant options")
)

// OwnerReference returns the controller reference to the stored Tenant t
// that a provider puts on what it makes for t, as Liqo's does: the garbage
// collector deletes those objects with the Tenant. t must carry its UID.
func OwnerReference(t *authv1beta1.Tenant) metav1.OwnerReference {
	return *metav1.NewControllerRef(t, authv1beta1.SchemeGroupVersion.WithKind(authv1beta1.TenantKind))
}

// FieldError reports which field of a Tenant was rejected, and why.
type FieldError struct {
	// Tenant is the name of the rejected Tenant.
	Tenant string
	// Field is the JSON path of the field, such as "spec.signature".
	Field string
	// Err is the cause.
	Err error
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("tenant %q rejected: %s: %v", e.Tenant, e.Field, e.Err)
}

func (e *FieldError) Unwrap() error { return e.Err }

// Namespace returns the tenant namespace for remoteID, with its labels.
func Namespace(remoteID string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: clusterid.TenantNamespace(remoteID),
		Labels: map[string]string{
			NamespaceLabel:  "true",
			clusterid.Label: remoteID,
		},
	}}
}

// BuildOptions tunes Build. The zero value, like a nil pointer, uses
// crypto/rand.Reader, no proxy and no transcript: the Tenant a Liqo consumer
// sends.
type BuildOptions struct {
	// Rand supplies randomness where the key type needs it.
	Rand io.Reader
	// ProxyURL is the http(s) proxy the consumer uses to reach the provider.
	ProxyURL string
	// ProviderID, when set, adds a transcript that binds the Tenant to that
	// provider, the nonce, the CSR and Expiry.
	ProviderID string
	// Expiry ends the transcript's validity; required with ProviderID.
	Expiry time.Time
	// IdentityKey, when set, is the key the CSR is for: a fresh key for
	// this identity, so the cluster key never becomes a TLS key. It
	// requires ProviderID, because only a transcript binds a CSR for
	// another key to the cluster key.
	IdentityKey crypto.Signer
}

// Build returns the Tenant that consumer consumerID sends to a provider that
// issued n, signed with the cluster key key.
func Build(consumerID string, key crypto.Signer, n nonce.Nonce, opts *BuildOptions) (*authv1beta1.Tenant, error) {
	if opts == nil {
		opts = &BuildOptions{}
	}
	if err := clusterid.Validate(consumerID); err != nil {
		return nil, err
	}
	var proxy *string
	if opts.ProxyURL != "" {
		if err := ValidateProxyURL(opts.ProxyURL); err != nil {
			return nil, err
		}
		proxy = &opts.ProxyURL
	}
	if opts.ProviderID != "" {
		if err := clusterid.Validate(opts.ProviderID); err != nil {
			return nil, err
		}
		if opts.Expiry.IsZero() {
			return nil, fmt.Errorf("%w: a transcript needs an expiry", ErrInvalidOptions)
		}
	} else if opts.IdentityKey != nil {
		return nil, fmt.Errorf("%w: an identity key needs a transcript (set ProviderID)", ErrInvalidOptions)
	}
	pub, err := keys.MarshalPublicKey(key.Public())
	if err != nil {
		return nil, err
	}
	sig, err := nonce.Sign(opts.Rand, key, n)
	if err != nil {
		return nil, err
	}
	csrKey := key
	if opts.IdentityKey != nil {
		csrKey = opts.IdentityKey
	}
	req, err := csr.Create(opts.Rand, csrKey, csr.ControlPlaneSubject(consumerID))
	if err != nil {
		return nil, err
	}
	t := &authv1beta1.Tenant{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.SchemeGroupVersion.String(), Kind: authv1beta1.TenantKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:      consumerID,
			Namespace: clusterid.TenantNamespace(consumerID),
			Labels:    map[string]string{clusterid.Label: consumerID},
		},
		Spec: authv1beta1.TenantSpec{
			ClusterID:       consumerID,
			AuthzPolicy:     authv1beta1.KeysExchange,
			PublicKey:       pub,
			CSR:             req,
			Signature:       sig,
			ProxyURL:        proxy,
			TenantCondition: authv1beta1.TenantConditionActive,
		},
	}
	if opts.ProviderID != "" {
		tr := Transcript{ProviderID: opts.ProviderID, ConsumerID: consumerID, Nonce: n, CSR: req, Expiry: opts.Expiry.Truncate(time.Second),
			AuthzPolicy: t.Spec.AuthzPolicy, TenantCondition: t.Spec.TenantCondition, ProxyURL: t.Spec.ProxyURL}
		err := signTranscript(t, tr, func(msg []byte) ([]byte, error) { return keys.SignMessage(opts.Rand, key, msg) })
		if err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Verified is what a provider learns from a Tenant that passed Verify.
type Verified struct {
	// ClusterID is the consumer's cluster ID.
	ClusterID string
	// PublicKey is the consumer's cluster key.
	PublicKey crypto.PublicKey
	// CSR is the consumer's checked ControlPlane CSR. Its key is the
	// cluster key, or a per-identity key bound by the transcript.
	CSR *csr.Checked
	// ProxyURL is the consumer's proxy, if it sent one.
	ProxyURL *string
	// Transcript reports whether a transcript was verified.
	Transcript bool
	// HandedOver are the keys PublicKey took over from, by a hand-over
	// both cluster keys signed (package enrol): the previous cluster key
	// and the identity key it held. A certificate they hold for the
	// consumer is held by PublicKey too. Nil when there was none.
	HandedOver []crypto.PublicKey
	// Expiry is when the verified transcript stops being valid; zero when
	// no transcript was verified. Recheck judges it at another time.
	Expiry time.Time

	// tenant is the Tenant's name, for Recheck's errors.
	tenant string
}

// Recheck reports whether v, which Verify returned for a Tenant and a
// nonce, would still pass Verify of the same Tenant, nonce, provider ID and
// policy at now: everything Verify checks but the transcript's expiry is
// independent of time, so only the expiry is judged again. It returns the
// *FieldError wrapping ErrTranscriptExpired that Verify would return at
// now, or nil. It is for a caller that verified a Tenant against a nonce
// before redeeming it and redeemed that same nonce: with any other nonce,
// call Verify.
func (v *Verified) Recheck(now time.Time) error {
	if !v.Transcript {
		return nil
	}
	if err := checkExpiry(v.Expiry, now); err != nil {
		return &FieldError{Tenant: v.tenant, Field: "metadata.annotations[" + TranscriptSignatureAnnotation + "]", Err: err}
	}
	return nil
}

// VerifyOptions tunes Verify. The zero value, like a nil pointer, applies the
// Compatible policy with no provider ID (so a Tenant carrying a transcript
// fails) at time.Now().
type VerifyOptions struct {
	// ProviderID is the verifying provider's cluster ID, which a
	// transcript must name.
	ProviderID string
	// Policy selects Compatible or Strict checking.
	Policy Policy
	// Now is the time a transcript must be valid at.
	Now time.Time
}

// Validate checks what can be checked in t without the nonce: the cluster
// ID, the public key's encoding, type and size, the sizes of the CSR and the
// signature, and the proxy URL. It needs no I/O and changes nothing, so a
// provider runs it before redeeming the nonce. It returns the parsed key.
func Validate(t *authv1beta1.Tenant) (crypto.PublicKey, error) {
	fail := func(field string, err error) error {
		return &FieldError{Tenant: t.Name, Field: field, Err: err}
	}
	if err := clusterid.Validate(t.Spec.ClusterID); err != nil {
		return nil, fail("spec.clusterID", err)
	}
	pub, err := keys.ParsePublicKey(t.Spec.PublicKey)
	if err != nil {
		return nil, fail("spec.publicKey", err)
	}
	if len(t.Spec.CSR) == 0 || len(t.Spec.CSR) > csr.MaxSize {
		return nil, fail("spec.csr", fmt.Errorf("%w: %d bytes", csr.ErrMalformed, len(t.Spec.CSR)))
	}
	if len(t.Spec.Signature) == 0 || len(t.Spec.Signature) > MaxSignatureSize {
		return nil, fail("spec.signature", fmt.Errorf("%w: %d bytes", keys.ErrBadSignature, len(t.Spec.Signature)))
	}
	if t.Spec.ProxyURL != nil {
		if err := ValidateProxyURL(*t.Spec.ProxyURL); err != nil {
			return nil, fail("spec.proxyURL", err)
		}
	}
	return pub, nil
}

// Verify checks t against the nonce n the provider issued to t's cluster:
// everything Validate checks, the signature over n, the transcript when t
// carries one (or the policy requires one), and the CSR against the
// ControlPlane policy. Without a verified transcript the CSR must be for the
// cluster key itself; with one, it may be for the per-identity key the
// transcript binds.
func Verify(t *authv1beta1.Tenant, n nonce.Nonce, opts *VerifyOptions) (*Verified, error) {
	if opts == nil {
		opts = &VerifyOptions{}
	}
	pub, err := Validate(t)
	if err != nil {
		return nil, err
	}
	fail := func(field string, err error) error {
		return &FieldError{Tenant: t.Name, Field: field, Err: err}
	}
	if err := nonce.Verify(pub, n, t.Spec.Signature); err != nil {
		return nil, fail("spec.signature", err)
	}
	transcript, expiry, err := verifyTranscript(t, n, pub, opts)
	if err != nil {
		return nil, fail("metadata.annotations["+TranscriptSignatureAnnotation+"]", err)
	}
	policy := csr.ControlPlanePolicy(t.Spec.ClusterID, pub)
	if transcript {
		policy.PublicKey = nil // bound by the transcript instead
	}
	checked, err := csr.Check(t.Spec.CSR, policy)
	if err != nil {
		return nil, fail("spec.csr", err)
	}
	return &Verified{ClusterID: t.Spec.ClusterID, PublicKey: pub, CSR: checked, ProxyURL: t.Spec.ProxyURL, Transcript: transcript,
		Expiry: expiry, tenant: t.Name}, nil
}

// verifyTranscript reports whether t carries a valid transcript, and its
// expiry, and fails when it carries an invalid one or the policy requires
// one.
func verifyTranscript(t *authv1beta1.Tenant, n nonce.Nonce, pub crypto.PublicKey, opts *VerifyOptions) (bool, time.Time, error) {
	tr, sig, present, err := readTranscript(t, n)
	switch {
	case err != nil:
		return false, time.Time{}, err
	case !present && opts.Policy == Strict:
		return false, time.Time{}, ErrTranscriptMissing
	case !present:
		return false, time.Time{}, nil
	case opts.ProviderID == "" || tr.ProviderID != opts.ProviderID:
		return false, time.Time{}, fmt.Errorf("%w: made for provider %q, verified by %q", ErrTranscriptMismatch, tr.ProviderID, opts.ProviderID)
	case tr.Version == 1 && opts.Policy == Strict:
		return false, time.Time{}, fmt.Errorf("%w: version 1 does not cover spec.proxyURL, spec.authzPolicy and spec.tenantCondition", ErrTranscriptMismatch)
	case tr.Version == 1 && !coversTerms(t):
		return false, time.Time{}, fmt.Errorf("%w: version 1 does not cover the proxy URL, policy or condition this Tenant sets", ErrTranscriptMismatch)
	}
	msg, err := tr.Marshal()
	if err != nil {
		return false, time.Time{}, fmt.Errorf("%w: %w", ErrTranscriptMismatch, err)
	}
	if err := keys.VerifyMessage(pub, msg, sig); err != nil {
		return false, time.Time{}, fmt.Errorf("%w: %w", ErrTranscriptMismatch, err)
	}
	if err := checkExpiry(tr.Expiry, opts.Now); err != nil {
		return false, time.Time{}, err
	}
	return true, tr.Expiry, nil
}

// checkExpiry refuses a transcript expiring at expiry that is, at now
// (time.Now() when zero), past it or valid for more than
// MaxTranscriptLifetime ahead.
func checkExpiry(expiry, now time.Time) error {
	if now.IsZero() {
		now = time.Now()
	}
	if !now.Before(expiry) {
		return fmt.Errorf("%w: at %s", ErrTranscriptExpired, expiry.UTC().Format(time.RFC3339))
	}
	if expiry.Sub(now) > MaxTranscriptLifetime {
		return fmt.Errorf("%w: valid until %s, more than %s ahead", ErrTranscriptExpired, expiry.UTC().Format(time.RFC3339), MaxTranscriptLifetime)
	}
	return nil
}

// ValidateProxyURL checks that s is an absolute http or https URL; it
// returns an error wrapping ErrInvalidProxyURL otherwise. The error never
// quotes s, which may hold a password.
func ValidateProxyURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		// url.Parse's error quotes s whole, and some of its causes quote
		// the part that looked like a port: report neither.
		return fmt.Errorf("%w: it does not parse", ErrInvalidProxyURL)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: want an absolute http or https URL", ErrInvalidProxyURL)
	}
	return nil
}
