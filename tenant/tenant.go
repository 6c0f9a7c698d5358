// Package tenant builds the consumer's Tenant and verifies it on the provider.
//
// The consumer calls Build with its cluster ID, its cluster key and the
// provider's nonce: the result carries the public key (PKIX PEM), the
// signature over the nonce and a ControlPlane CSR. The provider calls
// Validate, which needs no nonce and changes nothing, then redeems the nonce
// (see nonce.Redeem) and calls Verify.
//
// Each cluster keeps the objects of a remote cluster in the tenant namespace
// "liqo-tenant-<remote cluster ID>" (see Namespace).
//
// # Errors
//
// Validate and Verify return a *FieldError naming the field that failed and
// wrapping the cause: clusterid.ErrInvalid, keys.ErrMalformed,
// keys.ErrUnsupported, keys.ErrWeak, keys.ErrBadSignature, nonce errors, one
// of the csr Err values, or ErrInvalidProxyURL.
package tenant

import (
	"crypto"
	"errors"
	"fmt"
	"io"
	"net/url"

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

// ErrInvalidProxyURL reports a proxy URL that is not an absolute http or
// https URL.
var ErrInvalidProxyURL = errors.New("invalid proxy URL")

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
// crypto/rand.Reader and no proxy.
type BuildOptions struct {
	// Rand supplies randomness where the key type needs it.
	Rand io.Reader
	// ProxyURL is the http(s) proxy the consumer uses to reach the provider.
	ProxyURL string
}

// Build returns the Tenant that consumer consumerID sends to a provider that
// issued n, signed with key.
func Build(consumerID string, key crypto.Signer, n nonce.Nonce, opts *BuildOptions) (*authv1beta1.Tenant, error) {
	if opts == nil {
		opts = &BuildOptions{}
	}
	if err := clusterid.Validate(consumerID); err != nil {
		return nil, err
	}
	var proxy *string
	if opts.ProxyURL != "" {
		if err := validateProxyURL(opts.ProxyURL); err != nil {
			return nil, err
		}
		proxy = &opts.ProxyURL
	}
	pub, err := keys.MarshalPublicKey(key.Public())
	if err != nil {
		return nil, err
	}
	sig, err := nonce.Sign(opts.Rand, key, n)
	if err != nil {
		return nil, err
	}
	req, err := csr.Create(opts.Rand, key, csr.ControlPlaneSubject(consumerID))
	if err != nil {
		return nil, err
	}
	return &authv1beta1.Tenant{
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
	}, nil
}

// Verified is what a provider learns from a Tenant that passed Verify.
type Verified struct {
	// ClusterID is the consumer's cluster ID.
	ClusterID string
	// PublicKey is the consumer's cluster key.
	PublicKey crypto.PublicKey
	// CSR is the consumer's checked ControlPlane CSR.
	CSR *csr.Checked
	// ProxyURL is the consumer's proxy, if it sent one.
	ProxyURL *string
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
		if err := validateProxyURL(*t.Spec.ProxyURL); err != nil {
			return nil, fail("spec.proxyURL", err)
		}
	}
	return pub, nil
}

// Verify checks t against the nonce n the provider issued to t's cluster:
// everything Validate checks, the signature over n, and the CSR against the
// ControlPlane policy for the same key.
func Verify(t *authv1beta1.Tenant, n nonce.Nonce) (*Verified, error) {
	pub, err := Validate(t)
	if err != nil {
		return nil, err
	}
	if err := nonce.Verify(pub, n, t.Spec.Signature); err != nil {
		return nil, &FieldError{Tenant: t.Name, Field: "spec.signature", Err: err}
	}
	checked, err := csr.Check(t.Spec.CSR, csr.ControlPlanePolicy(t.Spec.ClusterID, pub))
	if err != nil {
		return nil, &FieldError{Tenant: t.Name, Field: "spec.csr", Err: err}
	}
	return &Verified{ClusterID: t.Spec.ClusterID, PublicKey: pub, CSR: checked, ProxyURL: t.Spec.ProxyURL}, nil
}

func validateProxyURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidProxyURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: want an absolute http or https URL", ErrInvalidProxyURL)
	}
	return nil
}
