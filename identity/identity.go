// Package identity builds the Identity a provider hands back and checks it on
// the consumer.
//
// The provider calls Build with its cluster ID and the AuthParams it issued
// (API server URL, CA, signed certificate). The consumer calls Verify before
// it trusts the Identity enough to build a kubeconfig from it and, when the
// provider is reachable, Confirm to ask the provider who the kubeconfig
// authenticates as before writing it.
//
// # Security
//
// Build and Verify both require the API server to be an absolute https URL
// with a host (ValidateServer), so a provider never emits, and a consumer
// never trusts, an Identity that would send its client certificate in clear
// or to a local socket. Verify checks offline what the Identity alone lets
// it check: the certificate is for the consumer's own key, carries exactly
// the expected CN and O, is a leaf (not a CA) usable for client
// authentication, and is valid at the given time; a proxy URL, if any, is
// http or https. It checks the certificate's chain only against
// VerifyOptions.ClientCAs, the client CA the caller knows the provider's API
// server trusts: spec.authParams.ca is the CA of the provider's serving
// certificate, which is not the client CA on every distribution (k3s and
// RKE2 keep them apart), and is empty when the provider's API server has a
// publicly trusted certificate. Liqo accepts both, and so does Verify.
// Without ClientCAs only the provider can tell whether it trusts the
// certificate: Confirm asks it, with a SelfSubjectReview made with the new
// kubeconfig, through a Reviewer. CheckProvider checks that an Identity is
// the ControlPlane Identity of the provider the caller expects: nothing in
// the Identity itself proves who sent it.
//
// # Errors
//
// Build wraps clusterid.ErrInvalid or ErrMalformed. Verify wraps one of
// ErrMalformed, ErrUntrusted, ErrKeyMismatch, ErrExpired, ErrNotYetValid,
// ErrSubject, ErrCACertificate or ErrKeyUsage. Confirm wraps ErrRejected when
// the provider refuses the credentials and ErrWrongUser when it takes them
// for another user or groups; other errors (the provider unreachable, its
// serving certificate untrusted) come from the Reviewer. CheckProvider wraps
// ErrWrongProvider or ErrMalformed. An unacceptable API server wraps
// ErrInvalidServer, and ErrMalformed too.
package identity

import (
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base32"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/tenant"
)

var (
	// ErrNotFound reports an Identity a Getter or StatusApplier does not
	// store.
	ErrNotFound = errors.New("identity not found")
	// ErrMalformed reports an Identity whose fields do not parse.
	ErrMalformed = errors.New("malformed identity")
	// ErrUntrusted reports a certificate that does not chain to the client
	// CAs the caller supplied (VerifyOptions.ClientCAs).
	ErrUntrusted = errors.New("identity certificate is not signed by the expected CA")
	// ErrKeyMismatch reports a certificate for another key than the consumer's.
	ErrKeyMismatch = errors.New("identity certificate is for another key")
	// ErrExpired reports a certificate past its NotAfter.
	ErrExpired = errors.New("identity certificate has expired")
	// ErrNotYetValid reports a certificate before its NotBefore.
	ErrNotYetValid = errors.New("identity certificate is not yet valid")
	// ErrSubject reports a certificate with another CN or O than expected.
	ErrSubject = errors.New("identity certificate has the wrong subject")
	// ErrCACertificate reports a certificate that is a CA certificate, not
	// a client certificate.
	ErrCACertificate = errors.New("identity certificate is a CA certificate")
	// ErrKeyUsage reports a certificate whose extended key usage does not
	// allow client authentication.
	ErrKeyUsage = errors.New("identity certificate is not for client authentication")
	// ErrInvalidServer reports an API server that is not an absolute https
	// URL with a host. Errors that wrap it wrap ErrMalformed too.
	ErrInvalidServer = errors.New("identity API server is not an https URL with a host")
	// ErrWrongProvider reports an Identity issued by another provider than
	// the one the caller expects.
	ErrWrongProvider = errors.New("identity is for another provider")
)

// ValidateServer checks that server is an absolute https URL with a host and
// neither user information, query nor fragment: the API server a kubeconfig
// may send a client certificate to. Errors wrap ErrInvalidServer and
// ErrMalformed, and quote server only when it parses, without its user
// information.
func ValidateServer(server string) error {
	u, err := url.Parse(server)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %w: it does not parse", ErrMalformed, ErrInvalidServer)
	case u.Opaque != "" || u.Hostname() == "":
		// Redacted leaves an opaque URL ("user:password@host") whole:
		// quote nothing.
		return fmt.Errorf("%w: %w: it has no host", ErrMalformed, ErrInvalidServer)
	case u.Scheme != "https":
		return fmt.Errorf("%w: %w: %q", ErrMalformed, ErrInvalidServer, u.Redacted())
	case u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return fmt.Errorf("%w: %w: %q has user information, a query or a fragment", ErrMalformed, ErrInvalidServer, u.Redacted())
	}
	return nil
}

// CheckProvider checks that id is the ControlPlane Identity that provider
// providerID issues: spec.clusterID is providerID (else ErrWrongProvider),
// the type is ControlPlane and the name is ControlPlaneName(providerID)
// (else ErrMalformed). Call it with the provider the caller means to trust,
// never with the ID read from id.
func CheckProvider(id *authv1beta1.Identity, providerID string) error {
	if err := clusterid.Validate(providerID); err != nil {
		return err
	}
	if id.Spec.ClusterID != providerID {
		return fmt.Errorf("%w: identity %q is for provider %q, want %q", ErrWrongProvider, id.Name, id.Spec.ClusterID, providerID)
	}
	if id.Spec.Type != authv1beta1.ControlPlaneIdentityType || id.Name != ControlPlaneName(providerID) {
		return fmt.Errorf("%w: %s identity %q, want ControlPlane identity %q",
			ErrMalformed, id.Spec.Type, id.Name, ControlPlaneName(providerID))
	}
	return nil
}

// ControlPlaneName is the name of the ControlPlane Identity for a provider.
func ControlPlaneName(providerID string) string { return "controlplane-" + providerID }

// ResourceSliceName is the name of the Identity of a ResourceSlice.
func ResourceSliceName(sliceName string) string { return "resourceslice-" + sliceName }

// ResourceSliceKeyName is the name, in a consumer's keys.Keyring, of the
// key of its ResourceSlice identity sliceName with providerID: "rs-", ten
// characters of the SHA-256 of the provider's ID in lower-case base32, "-"
// and the slice's name. Slices of one name toward two providers get two
// keys, and the name is no longer than ResourceSliceName, so that the
// longest slice name (resourceslice.MaxNameLength) still fits a Secret
// name.
func ResourceSliceKeyName(providerID, sliceName string) string {
	sum := sha256.Sum256([]byte(providerID))
	return "rs-" + strings.ToLower(base32.StdEncoding.EncodeToString(sum[:]))[:10] + "-" + sliceName
}

// BuildOptions tunes Build. The zero value, like a nil pointer, builds an
// Identity without a remote tenant namespace.
type BuildOptions struct {
	// TenantNamespace is the consumer's tenant namespace on the provider;
	// it becomes the kubeconfig's default namespace.
	TenantNamespace string
}

// Build returns the ControlPlane Identity that provider providerID issues to
// a consumer, carrying params. It lives in the consumer's tenant namespace
// for the provider. params.CA may be empty: the provider's API server has a
// publicly trusted certificate, and consumers use their system roots.
func Build(providerID string, params authv1beta1.AuthParams, opts *BuildOptions) (*authv1beta1.Identity, error) {
	if err := clusterid.Validate(providerID); err != nil {
		return nil, err
	}
	if err := ValidateServer(params.APIServer); err != nil {
		return nil, fmt.Errorf("spec.authParams.apiServer: %w", err)
	}
	if len(params.SignedCRT) == 0 {
		return nil, fmt.Errorf("%w: missing certificate", ErrMalformed)
	}
	id := &authv1beta1.Identity{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.SchemeGroupVersion.String(), Kind: authv1beta1.IdentityKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:      ControlPlaneName(providerID),
			Namespace: clusterid.TenantNamespace(providerID),
			Labels:    map[string]string{clusterid.Label: providerID},
		},
		Spec: authv1beta1.IdentitySpec{
			ClusterID:  providerID,
			Type:       authv1beta1.ControlPlaneIdentityType,
			AuthParams: *params.DeepCopy(),
		},
	}
	if opts != nil && opts.TenantNamespace != "" {
		ns := opts.TenantNamespace
		id.Spec.Namespace = &ns
	}
	return id, nil
}

// VerifyOptions tunes Verify. The zero value, like a nil pointer, checks no
// chain: spec.authParams.ca is never taken for the client CA.
type VerifyOptions struct {
	// ClientCAs, when set, are the client CAs of the provider's API server
	// (its --client-ca-file), known to the caller by other means than the
	// Identity: the certificate must chain to one of them for client
	// authentication, else ErrUntrusted.
	ClientCAs *x509.CertPool
	// Subject, when set, is the CN and O the certificate must carry instead
	// of csr.ControlPlaneSubject(consumerID): csr.ResourceSliceSubject for
	// the Identity of a ResourceSlice.
	Subject *pkix.Name
}

// Verify checks, offline, that id names an https API server and that its
// certificate is the ControlPlane certificate of consumer consumerID for key
// pub: a client certificate (not a CA, ErrCACertificate; usable for client
// authentication, ErrKeyUsage) with CN and O of csr.ControlPlaneSubject
// (ErrSubject), valid at now (ErrNotYetValid, ErrExpired), chaining to
// opts.ClientCAs when set (ErrUntrusted). spec.authParams.ca, the CA of the
// provider's serving certificate, may be empty; when set it must hold PEM
// certificates (ErrMalformed). It returns the parsed certificate.
func Verify(id *authv1beta1.Identity, consumerID string, pub crypto.PublicKey, now time.Time, opts *VerifyOptions) (*x509.Certificate, error) {
	if err := checkEndpoint(&id.Spec.AuthParams); err != nil {
		return nil, err
	}
	cert, err := csr.ParseCertificate(id.Spec.AuthParams.SignedCRT)
	if err != nil {
		return nil, fmt.Errorf("%w: spec.authParams.signedCRT: %w", ErrMalformed, err)
	}
	if err := checkServingCA(id.Spec.AuthParams.CA); err != nil {
		return nil, err
	}
	if err := checkValidity(cert, now); err != nil {
		return nil, err
	}
	if err := checkKey(cert, pub); err != nil {
		return nil, err
	}
	if err := checkSubject(cert, consumerID, opts); err != nil {
		return nil, err
	}
	if err := checkClientCertificate(cert); err != nil {
		return nil, err
	}
	if err := checkChain(cert, now, opts); err != nil {
		return nil, err
	}
	return cert, nil
}

// checkEndpoint checks that p names an https API server and, when set, a
// valid proxy URL (ErrMalformed).
func checkEndpoint(p *authv1beta1.AuthParams) error {
	if err := ValidateServer(p.APIServer); err != nil {
		return fmt.Errorf("spec.authParams.apiServer: %w", err)
	}
	if p.ProxyURL != nil {
		if err := tenant.ValidateProxyURL(*p.ProxyURL); err != nil {
			return fmt.Errorf("%w: spec.authParams.proxyURL: %w", ErrMalformed, err)
		}
	}
	return nil
}

// checkServingCA checks that ca, the CA of the provider's serving
// certificate, is empty or holds PEM certificates (ErrMalformed).
func checkServingCA(ca []byte) error {
	if len(ca) > 0 && (len(ca) > csr.MaxCertificateSize || !x509.NewCertPool().AppendCertsFromPEM(ca)) {
		return fmt.Errorf("%w: spec.authParams.ca holds no PEM certificate", ErrMalformed)
	}
	return nil
}

// checkValidity checks that cert is valid at now (ErrNotYetValid,
// ErrExpired).
func checkValidity(cert *x509.Certificate, now time.Time) error {
	switch {
	case now.Before(cert.NotBefore):
		return fmt.Errorf("%w: valid from %s", ErrNotYetValid, cert.NotBefore.UTC().Format(time.RFC3339))
	case now.After(cert.NotAfter):
		return fmt.Errorf("%w: valid until %s", ErrExpired, cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return nil
}

// checkKey checks that cert's key is an accepted key (ErrMalformed) and is
// pub (ErrKeyMismatch).
func checkKey(cert *x509.Certificate, pub crypto.PublicKey) error {
	if err := keys.Check(cert.PublicKey); err != nil {
		return fmt.Errorf("%w: spec.authParams.signedCRT: certificate key: %w", ErrMalformed, err)
	}
	if !keys.Equal(pub, cert.PublicKey) {
		return fmt.Errorf("%w: certificate key %s, own key %s", ErrKeyMismatch, keys.Fingerprint(cert.PublicKey), keys.Fingerprint(pub))
	}
	return nil
}

// checkSubject checks that cert carries the CN and O of opts.Subject, else
// of csr.ControlPlaneSubject(consumerID) (ErrSubject).
func checkSubject(cert *x509.Certificate, consumerID string, opts *VerifyOptions) error {
	want := csr.ControlPlaneSubject(consumerID)
	if opts != nil && opts.Subject != nil {
		want = *opts.Subject
	}
	if cert.Subject.CommonName != want.CommonName || !slices.Equal(cert.Subject.Organization, want.Organization) {
		return fmt.Errorf("%w: CN=%q O=%q, want CN=%q O=%q", ErrSubject,
			cert.Subject.CommonName, cert.Subject.Organization, want.CommonName, want.Organization)
	}
	return nil
}

// checkClientCertificate checks that cert is no CA (ErrCACertificate) and
// may authenticate a client (ErrKeyUsage).
func checkClientCertificate(cert *x509.Certificate) error {
	if cert.IsCA {
		return fmt.Errorf("%w: basic constraints say CA", ErrCACertificate)
	}
	if !clientAuth(cert) {
		return fmt.Errorf("%w: extended key usage %v", ErrKeyUsage, cert.ExtKeyUsage)
	}
	return nil
}

// checkChain checks, when opts.ClientCAs is set, that cert chains to one of
// them for client authentication at now (ErrUntrusted).
func checkChain(cert *x509.Certificate, now time.Time, opts *VerifyOptions) error {
	if opts == nil || opts.ClientCAs == nil {
		return nil
	}
	if _, err := cert.Verify(x509.VerifyOptions{
		Roots:       opts.ClientCAs,
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return fmt.Errorf("%w: %w", ErrUntrusted, err)
	}
	return nil
}

// clientAuth reports whether cert may authenticate a client as Go's TLS
// stack, and so the Kubernetes API server, judges it: without an extended
// key usage extension, or with one that lists client authentication or any
// usage.
func clientAuth(cert *x509.Certificate) bool {
	if len(cert.ExtKeyUsage) == 0 && len(cert.UnknownExtKeyUsage) == 0 {
		return true
	}
	return slices.ContainsFunc(cert.ExtKeyUsage, func(u x509.ExtKeyUsage) bool {
		return u == x509.ExtKeyUsageClientAuth || u == x509.ExtKeyUsageAny
	})
}

// Store keeps Identities on the consumer.
//
// List returns the Identities in namespace, sorted by name. Apply creates id
// or sets id's spec, labels, annotations, finalizers and owner references on
// the stored one, and its status too unless id's status is the zero value
// (then the stored status is kept); it returns what is stored (with its
// UID). Apply owns only what it applies, as a server-side apply does:
// metadata another component set on the Identity stays, and a label,
// annotation or finalizer Apply set before and id no longer has goes.
// Delete deletes the Identity and succeeds when there is none; finalizers
// others put on it stay, and keep it, terminating, until they remove them.
// Implementations are safe for concurrent use.
type Store interface {
	List(ctx context.Context, namespace string) ([]authv1beta1.Identity, error)
	Apply(ctx context.Context, id *authv1beta1.Identity) (*authv1beta1.Identity, error)
	Delete(ctx context.Context, namespace, name string) error
}

// Getter is a Store that also reads one Identity by name: Get returns the
// Identity namespace/name, or an error wrapping ErrNotFound. On an API
// server a read by name is served at once, where a consistent list may
// wait for the server's cache to catch up; a consumer looks up the
// Identity it already holds for a provider with it.
type Getter interface {
	Store
	Get(ctx context.Context, namespace, name string) (*authv1beta1.Identity, error)
}

// StatusApplier is a Store that also writes an Identity's status alone:
// ApplyStatus sets the status of the stored Identity id.Namespace/id.Name
// to id's (through the status subresource on an API server) and returns
// what is stored. It creates nothing: an Identity it does not store is an
// error wrapping ErrNotFound. A consumer points its new Identity at the
// kubeconfig Secret with it, one write instead of an Apply of the spec
// again and of the status.
type StatusApplier interface {
	Store
	ApplyStatus(ctx context.Context, id *authv1beta1.Identity) (*authv1beta1.Identity, error)
}
