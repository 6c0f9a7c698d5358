// Package resourceslice builds a consumer's ResourceSlices and judges them on
// the provider: the steps of a ResourceSlice identity, without I/O.
//
// A consumer asks a provider for a share of its resources, and for an
// identity to use them, with a ResourceSlice in its tenant namespace for the
// provider (Build). The slice carries a CSR with CN
// "<slice>-<first 12 hex of sha256(consumerID)>" and O exactly the consumer
// ID (csr.ResourceSliceSubject). A replicator copies the spec to the
// provider's tenant namespace for the consumer, and the status back.
//
// On the provider, Verify decides the Authentication condition and Decide
// the Resources condition; SetCondition records them, changing
// lastTransitionTime only on a transition.
//
// A slice whose resources are accepted is offered, in its status, what a
// Liqo consumer builds its virtual node from, as Liqo's provider offers it
// for the default class: Resources (the spec's quantities plus an Offer's
// default quantities, DefaultResources being Liqo's Helm chart's), Cap (a
// Policy's limits), StorageClasses (the cluster's, from a
// StorageClassLister, with the default marked), and the Offer's ingress
// and load-balancer classes and node labels; Grant writes them, Withdraw
// clears them from a denied slice.
//
// # Security
//
// Verify accepts a slice only when all of these hold: it lives in the
// tenant namespace "liqo-tenant-<consumerID>" of the consumer named by its
// spec.consumerClusterID, its spec.providerClusterID is this provider, the
// consumer has an accepted Tenant (status filled, not being deleted), and
// its CSR passes csr.Check with the exact slice policy: one PEM block, the
// exact CN, O exactly [consumerID] (never only O[0], as Liqo checks), no
// SAN, an accepted key type. Which key the CSR may be for depends on how the
// consumer's Tenant was accepted:
//
//   - A Tenant under authzPolicy TolerateNoHandshake: any accepted key, as
//     in Liqo.
//   - A Tenant whose ControlPlane certificate is for its cluster key
//     (spec.publicKey; every Liqo consumer, and a kubepact consumer that is
//     not Strict): the cluster key, as in Liqo. A slice for another key is
//     refused with csr.ErrKeyMismatch.
//   - A Tenant whose ControlPlane CSR is for a per-identity key bound by a
//     verified transcript (a Strict kubepact consumer): a fresh key, neither
//     the cluster key nor the ControlPlane key (csr.ErrKeyMismatch
//     otherwise), so every identity of that consumer has a key of its own.
//     Nothing in the slice proves who made it; what binds it to the
//     consumer is where it lives: only the consumer's ControlPlane identity,
//     the one the transcript authenticated, and the provider's
//     administrators may write ResourceSlices in its tenant namespace.
//
// A provider signs certificates for a consumer's slices within Bounds: a
// number of live slices (the oldest first, by the creationTimestamp the API
// server sets), a shortest time between two CSRs of one slice, and a number
// of new requests an hour, so a consumer that creates slice after slice, or
// gives one slice CSR after CSR, cannot make it sign without end. Admit
// decides from what only the provider and the API server write, never from
// a slice's status or labels.
//
// # Errors
//
// Verify returns a *DeniedError, which wraps ErrDenied and the cause:
// clusterid.ErrInvalid, ErrWrongNamespace, ErrWrongProvider, ErrNoTenant,
// or an error of csr.Check (csr.ErrMalformed, csr.ErrCommonName,
// csr.ErrOrganization, csr.ErrSAN, csr.ErrKeyMismatch, ...).
//
// A Policy refuses a slice with an error wrapping ErrRefused; any other
// error of a Policy or a StorageClassLister is a failure to decide.
//
// Bounds.Admit refuses a certificate over a per-consumer bound with a
// *BoundError, which wraps ErrBound and one of ErrSliceLimit,
// ErrRekeyTooSoon and ErrCertificateRate.
//
// # Concurrency
//
// Every function is pure and safe for concurrent use; implementations of
// the ports (Store, Policy, StorageClassLister) must be too.
package resourceslice

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/keys"
)

// Labels of replicated objects (ResourceSlices and Renews), as Liqo's CRD
// replicator sets them. On the consumer: ReplicationLabel "true" and
// RemoteIDLabel = the provider ID; on the provider: ReplicatedLabel "true"
// and OriginIDLabel = the consumer ID. clusterid.Label names the other
// cluster on both.
const (
	ReplicationLabel = "liqo.io/replication"
	RemoteIDLabel    = "liqo.io/remoteID"
	ReplicatedLabel  = "liqo.io/replicated"
	OriginIDLabel    = "liqo.io/originID"
)

// IdentityLabel names, on a slice's Identity, the slice it belongs to.
const IdentityLabel = "liqo.io/resourceslice-name"

// Finalizer is kubepact's finalizer on ResourceSlices: on the provider it
// holds a slice until its cached certificate, and the bindings no other
// slice of the consumer needs, are gone; on the consumer until its
// Identity, kubeconfig Secret and key are.
const Finalizer = "resourceslice.kubepact.io/finalizer"

// Reasons of the conditions, as Liqo writes them.
const (
	ReasonAuthenticationAccepted = "ResourceSliceAuthenticationAccepted"
	ReasonAuthenticationDenied   = "ResourceSliceAuthenticationDenied"
	ReasonResourcesAccepted      = "ResourceSliceResourcesAccepted"
	ReasonResourcesDenied        = "ResourceSliceResourcesDenied"
)

var (
	// ErrDenied reports a slice the provider refuses to authenticate.
	// Errors wrapping it are *DeniedError.
	ErrDenied = errors.New("resource slice denied")
	// ErrWrongNamespace reports a slice outside the tenant namespace of
	// the consumer its spec names.
	ErrWrongNamespace = errors.New("resource slice is not in its consumer's tenant namespace")
	// ErrWrongProvider reports a slice for another provider.
	ErrWrongProvider = errors.New("resource slice is for another provider")
	// ErrNoTenant reports a slice of a consumer without an accepted Tenant.
	ErrNoTenant = errors.New("resource slice of a consumer without an accepted tenant")
	// ErrUserTaken reports a slice whose certificate user (its CN) is the
	// user of a consumer's ControlPlane identity: the slice certificate
	// would inherit that consumer's bindings.
	ErrUserTaken = errors.New("resource slice user is a consumer's ControlPlane user")
	// ErrMalformed reports a slice the consumer cannot build or use.
	ErrMalformed = errors.New("malformed resource slice")
)

// DeniedError says why a slice is denied. It wraps ErrDenied and the cause.
type DeniedError struct {
	// Slice is the slice's namespace/name.
	Slice string
	// Field is the field at fault.
	Field string
	Err   error
}

func (e *DeniedError) Error() string {
	return fmt.Sprintf("%v: %s: %s: %v", ErrDenied, e.Slice, e.Field, e.Err)
}

// Unwrap returns ErrDenied and the cause.
func (e *DeniedError) Unwrap() []error { return []error{ErrDenied, e.Err} }

// MaxNameLength bounds a slice name: the names derived from it must stay
// valid, the longest being the Secret of a Strict consumer's slice key,
// "kubepact-key-resourceslice-<slice>" (then "kubeconfig-resourceslice-<slice>",
// "liqo-remote-certificate-<slice>").
const MaxNameLength = validation.DNS1123SubdomainMaxLength - len("kubepact-key-resourceslice-")

// ValidateName checks a slice name: a DNS-1123 subdomain short enough for
// the names derived from it.
func ValidateName(name string) error {
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return fmt.Errorf("%w: name %q: %s", ErrMalformed, name, strings.Join(msgs, "; "))
	}
	if len(name) > MaxNameLength {
		return fmt.Errorf("%w: name %q is longer than %d characters", ErrMalformed, name, MaxNameLength)
	}
	return nil
}

// BuildOptions tunes Build. The zero value, like a nil pointer, asks for
// class DefaultResourceSliceClass and no resources.
type BuildOptions struct {
	Class     authv1beta1.ResourceSliceClass
	Resources corev1.ResourceList
}

// Build returns the ResourceSlice name that consumer consumerID asks
// provider providerID for, in its tenant namespace for the provider, with
// the replication labels and a CSR for key (randomness from r).
func Build(r io.Reader, consumerID, providerID, name string, key crypto.Signer, opts *BuildOptions) (*authv1beta1.ResourceSlice, error) {
	if err := clusterid.Validate(consumerID); err != nil {
		return nil, err
	}
	if err := clusterid.Validate(providerID); err != nil {
		return nil, err
	}
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	if opts == nil {
		opts = &BuildOptions{}
	}
	class := opts.Class
	if class == "" {
		class = authv1beta1.DefaultResourceSliceClass
	}
	req, err := csr.Create(r, key, csr.ResourceSliceSubject(consumerID, name))
	if err != nil {
		return nil, err
	}
	return &authv1beta1.ResourceSlice{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.SchemeGroupVersion.String(), Kind: authv1beta1.ResourceSliceKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: clusterid.TenantNamespace(providerID),
			Labels:    ConsumerLabels(providerID),
		},
		Spec: authv1beta1.ResourceSliceSpec{
			ConsumerClusterID: &consumerID,
			ProviderClusterID: &providerID,
			Resources:         opts.Resources.DeepCopy(),
			Class:             class,
			CSR:               req,
		},
	}, nil
}

// ConsumerLabels are the labels of a replicated object on the consumer.
func ConsumerLabels(providerID string) map[string]string {
	return map[string]string{ReplicationLabel: "true", RemoteIDLabel: providerID, clusterid.Label: providerID}
}

// ProviderLabels are the labels of a replicated object on the provider.
func ProviderLabels(consumerID string) map[string]string {
	return map[string]string{ReplicatedLabel: "true", OriginIDLabel: consumerID, clusterid.Label: consumerID}
}

// ConsumerOf returns the consumer whose tenant namespace namespace is.
func ConsumerOf(namespace string) (string, error) {
	id, ok := strings.CutPrefix(namespace, clusterid.TenantNamespacePrefix)
	if !ok {
		return "", fmt.Errorf("%w: %q is no tenant namespace", ErrWrongNamespace, namespace)
	}
	if err := clusterid.Validate(id); err != nil {
		return "", fmt.Errorf("%w: %q: %w", ErrWrongNamespace, namespace, err)
	}
	return id, nil
}

// Verified is a slice that passed Verify.
type Verified struct {
	// ConsumerID is the consumer that asked for the slice.
	ConsumerID string
	// CSR is the slice's checked CSR.
	CSR *csr.Checked
}

// Verify decides the Authentication condition of slice s on provider
// providerID, given the Tenant t stored for the consumer of s's namespace
// (nil when there is none). See the package documentation for the rules.
func Verify(s *authv1beta1.ResourceSlice, providerID string, t *authv1beta1.Tenant) (*Verified, error) {
	if err := ValidateName(s.Name); err != nil {
		return nil, deny(s, "metadata.name", err)
	}
	consumerID, err := ConsumerOf(s.Namespace)
	if err != nil {
		return nil, deny(s, "metadata.namespace", err)
	}
	if err := checkConsumerID(s, consumerID); err != nil {
		return nil, err
	}
	if err := checkProviderID(s, providerID); err != nil {
		return nil, err
	}
	if err := checkTenant(s, t, consumerID); err != nil {
		return nil, err
	}
	policy, avoid, err := keyPolicy(s, t, consumerID)
	if err != nil {
		return nil, err
	}
	checked, err := csr.Check(s.Spec.CSR, policy)
	if err != nil {
		return nil, deny(s, "spec.csr", err)
	}
	if err := checkFreshKey(s, checked, avoid); err != nil {
		return nil, err
	}
	return &Verified{ConsumerID: consumerID, CSR: checked}, nil
}

// deny returns the *DeniedError of slice s for field and cause err.
func deny(s *authv1beta1.ResourceSlice, field string, err error) error {
	return &DeniedError{Slice: s.Namespace + "/" + s.Name, Field: field, Err: err}
}

// checkConsumerID checks that s's spec.consumerClusterID is set
// (clusterid.ErrInvalid) and is consumerID, the consumer of s's namespace
// (ErrWrongNamespace).
func checkConsumerID(s *authv1beta1.ResourceSlice, consumerID string) error {
	switch c := s.Spec.ConsumerClusterID; {
	case c == nil || *c == "":
		return deny(s, "spec.consumerClusterID", fmt.Errorf("%w: empty", clusterid.ErrInvalid))
	case *c != consumerID:
		return deny(s, "spec.consumerClusterID", fmt.Errorf("%w: %q lives in the tenant namespace of %q", ErrWrongNamespace, quote(*c), consumerID))
	}
	return nil
}

// checkProviderID checks that s's spec.providerClusterID is providerID
// (ErrWrongProvider).
func checkProviderID(s *authv1beta1.ResourceSlice, providerID string) error {
	if p := s.Spec.ProviderClusterID; p == nil || *p != providerID {
		got := ""
		if p != nil {
			got = *p
		}
		return deny(s, "spec.providerClusterID", fmt.Errorf("%w: %q, this provider is %q", ErrWrongProvider, quote(got), providerID))
	}
	return nil
}

// checkTenant checks that t is the authenticated, live Tenant of consumerID
// in s's namespace (ErrNoTenant).
func checkTenant(s *authv1beta1.ResourceSlice, t *authv1beta1.Tenant, consumerID string) error {
	if t == nil || t.Status.AuthParams == nil || t.DeletionTimestamp != nil ||
		t.Spec.ClusterID != consumerID || t.Namespace != s.Namespace {
		return deny(s, "metadata.namespace", fmt.Errorf("%w: consumer %q", ErrNoTenant, consumerID))
	}
	return nil
}

// keyPolicy returns the policy s's CSR must meet, and the keys its CSR must
// not be for. Unless t tolerates no handshake, the CSR must be for the
// consumer's cluster key, or, when the consumer's ControlPlane identity has
// a key of its own, for a fresh key: neither of those two. A Tenant whose
// public key does not parse is no Tenant (ErrNoTenant).
func keyPolicy(s *authv1beta1.ResourceSlice, t *authv1beta1.Tenant, consumerID string) (csr.Policy, []crypto.PublicKey, error) {
	policy := csr.ResourceSlicePolicy(consumerID, s.Name, nil)
	if t.Spec.AuthzPolicy == authv1beta1.TolerateNoHandshake {
		return policy, nil, nil
	}
	clusterKey, err := keys.ParsePublicKey(t.Spec.PublicKey)
	if err != nil {
		return policy, nil, deny(s, "metadata.namespace", fmt.Errorf("%w: its public key: %w", ErrNoTenant, err))
	}
	cp, err := x509.ParseCertificateRequest(pemBody(t.Spec.CSR))
	if err == nil && !keys.Equal(cp.PublicKey, clusterKey) {
		// A per-identity key: the slice needs a fresh one.
		return policy, []crypto.PublicKey{clusterKey, cp.PublicKey}, nil
	}
	policy.PublicKey = clusterKey
	return policy, nil, nil
}

// checkFreshKey checks that checked's key is none of avoid
// (csr.ErrKeyMismatch).
func checkFreshKey(s *authv1beta1.ResourceSlice, checked *csr.Checked, avoid []crypto.PublicKey) error {
	for _, k := range avoid {
		if keys.Equal(k, checked.PublicKey()) {
			return deny(s, "spec.csr", fmt.Errorf("%w: key %s is already the key of another identity of the consumer, want a fresh one",
				csr.ErrKeyMismatch, keys.Fingerprint(k)))
		}
	}
	return nil
}

// quote bounds a peer-chosen string quoted in an error.
func quote(s string) string {
	if len(s) > 63 {
		return s[:63] + "…"
	}
	return s
}

// Condition returns the condition of type typ of s, or nil.
func Condition(s *authv1beta1.ResourceSliceStatus, typ authv1beta1.ResourceSliceConditionType) *authv1beta1.ResourceSliceCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == typ {
			return &s.Conditions[i]
		}
	}
	return nil
}

// KnownConditions returns a copy of the Authentication and Resources
// conditions of conditions, the first of each type, sorted by type, and
// drops every other: what a provider keeps of a status its consumer may
// have written, so that lastTransitionTime moves only on a transition.
func KnownConditions(conditions []authv1beta1.ResourceSliceCondition) []authv1beta1.ResourceSliceCondition {
	var out []authv1beta1.ResourceSliceCondition
	for _, typ := range []authv1beta1.ResourceSliceConditionType{
		authv1beta1.ResourceSliceConditionTypeAuthentication, authv1beta1.ResourceSliceConditionTypeResources,
	} {
		for _, c := range conditions {
			if c.Type == typ {
				out = append(out, *c.DeepCopy())
				break
			}
		}
	}
	return out
}

// Accepted reports whether condition typ of s is Accepted.
func Accepted(s *authv1beta1.ResourceSliceStatus, typ authv1beta1.ResourceSliceConditionType) bool {
	c := Condition(s, typ)
	return c != nil && c.Status == authv1beta1.ResourceSliceConditionAccepted
}

// SetCondition sets condition typ of s to status, with reason and message.
// lastTransitionTime becomes now only when the status changes (or the
// condition is new). Conditions stay sorted by type.
func SetCondition(s *authv1beta1.ResourceSliceStatus, typ authv1beta1.ResourceSliceConditionType,
	status authv1beta1.ResourceSliceConditionStatus, reason, message string, now time.Time) {
	c := Condition(s, typ)
	if c == nil {
		s.Conditions = append(s.Conditions, authv1beta1.ResourceSliceCondition{Type: typ})
		slices.SortFunc(s.Conditions, func(a, b authv1beta1.ResourceSliceCondition) int {
			return strings.Compare(string(a.Type), string(b.Type))
		})
		c = Condition(s, typ)
	}
	if c.Status != status || c.LastTransitionTime.IsZero() {
		c.LastTransitionTime = metav1.NewTime(now.UTC().Truncate(time.Second))
	}
	c.Status, c.Reason, c.Message = status, reason, message
}

// Decide returns the Resources condition of a slice of class class, given
// the Tenant's condition and whether the slice's Resources condition was
// Accepted before: Denied when Drained; under Cordoned Denied for a slice
// never accepted, Accepted for one accepted before; otherwise Accepted.
// Classes other than DefaultResourceSliceClass (or empty) are Denied: a
// kubepact provider offers only the default class.
func Decide(class authv1beta1.ResourceSliceClass, tc authv1beta1.TenantCondition, wasAccepted bool) (authv1beta1.ResourceSliceConditionStatus, string) {
	switch {
	case class != "" && class != authv1beta1.DefaultResourceSliceClass:
		return authv1beta1.ResourceSliceConditionDenied, fmt.Sprintf("class %q is not offered", quote(string(class)))
	case tc == authv1beta1.TenantConditionDrained:
		return authv1beta1.ResourceSliceConditionDenied, "the tenant is drained"
	case tc == authv1beta1.TenantConditionCordoned && !wasAccepted:
		return authv1beta1.ResourceSliceConditionDenied, "the tenant is cordoned: no new slice is accepted"
	case tc == authv1beta1.TenantConditionCordoned:
		return authv1beta1.ResourceSliceConditionAccepted, "accepted before the tenant was cordoned"
	}
	return authv1beta1.ResourceSliceConditionAccepted, "resources accepted"
}

// pemBody returns the DER of the first PEM block of b, or nil.
func pemBody(b []byte) []byte {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil
	}
	return block.Bytes
}
