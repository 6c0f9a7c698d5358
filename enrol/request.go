package enrol

import (
	"bytes"
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"

	"golang.org/x/crypto/cryptobyte"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/resourceslice"
	"github.com/kubepact/kubepact/tenant"
)

// Contexts separate the signatures of this package from any other use of
// the keys that make them.
const (
	// RequestContext prefixes what a consumer's cluster key signs.
	RequestContext = "kubepact enrolment request"
	// GrantContext prefixes what a provider's enrolment key signs.
	GrantContext = "kubepact enrolment grant"
	// Version is the encoding's version, signed with it.
	Version = 1
)

var (
	// ErrMalformed reports an object of this package that cannot be
	// parsed: a key, a CSR or a field out of bounds.
	ErrMalformed = errors.New("malformed enrolment object")
	// ErrNotCommitted reports a key that the provider's AuthorizedConsumer
	// for the consumer ID does not list: it may get no identity for that
	// ID, in any flow.
	ErrNotCommitted = errors.New("key not committed for this consumer")
	// ErrBadRequest reports an enrolment request whose signature does not
	// verify with any committed key, or that names another provider or
	// consumer.
	ErrBadRequest = errors.New("enrolment request does not verify")
	// ErrClusterKeyCSR reports a request whose CSR is for the cluster key
	// itself: the cluster key must never become a TLS key.
	ErrClusterKeyCSR = errors.New("enrolment CSR is for the cluster key")
)

// Request is a consumer's enrolment request to one provider.
type Request struct {
	ProviderID string
	ConsumerID string
	// CSR is the PEM ControlPlane CSR, Signature the cluster key's
	// signature of the request's transcript.
	CSR       []byte
	Signature []byte
	// HandOver, when set, hands the consumer's previous cluster key over
	// to the key that signed the request (NewHandOverRequest).
	HandOver *HandOver
}

// transcript returns the canonical bytes a request's signature covers:
// the context, the version, both IDs and the SHA-256 of the CSR, each
// length-prefixed.
func (r *Request) transcript() []byte {
	sum := sha256.Sum256(r.CSR)
	var b cryptobyte.Builder
	addString(&b, RequestContext)
	b.AddUint8(Version)
	addString(&b, r.ProviderID)
	addString(&b, r.ConsumerID)
	b.AddUint8LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(sum[:]) })
	return b.BytesOrPanic() // only length overflows fail, and the fields are bounded
}

func addString(b *cryptobyte.Builder, s string) {
	b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes([]byte(s)) })
}

// PublicKey returns the key of r's CSR; a CSR that does not parse is an
// error wrapping ErrMalformed.
func (r *Request) PublicKey() (crypto.PublicKey, error) {
	block, _ := pem.Decode(r.CSR)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, fmt.Errorf("%w: the request's CSR is not a PEM CERTIFICATE REQUEST", ErrMalformed)
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: the request's CSR: %w", ErrMalformed, err)
	}
	return req.PublicKey, nil
}

// CSRSHA256 returns the hex SHA-256 of r's CSR, as a Grant names it.
func (r *Request) CSRSHA256() string { return csrSHA256(r.CSR) }

func csrSHA256(pemBytes []byte) string {
	sum := sha256.Sum256(pemBytes)
	return hex.EncodeToString(sum[:])
}

// NewRequest returns consumer consumerID's request to provider providerID:
// a ControlPlane CSR for identityKey, signed with the cluster key
// clusterKey. With Ed25519 keys the same keys make the same request.
func NewRequest(rand io.Reader, providerID, consumerID string, clusterKey, identityKey crypto.Signer) (*Request, error) {
	for _, id := range []string{providerID, consumerID} {
		if err := clusterid.Validate(id); err != nil {
			return nil, err
		}
	}
	if keys.Equal(clusterKey.Public(), identityKey.Public()) {
		return nil, ErrClusterKeyCSR
	}
	req, err := csr.Create(rand, identityKey, csr.ControlPlaneSubject(consumerID))
	if err != nil {
		return nil, err
	}
	r := &Request{ProviderID: providerID, ConsumerID: consumerID, CSR: req}
	if r.Signature, err = keys.SignMessage(rand, clusterKey, r.transcript()); err != nil {
		return nil, err
	}
	return r, nil
}

// API returns r as the API carries it.
func (r *Request) API() peeringv1alpha1.EnrolmentRequest {
	return peeringv1alpha1.EnrolmentRequest{CSR: string(r.CSR), Signature: bytes.Clone(r.Signature), HandOver: r.HandOver.api()}
}

// Commitment is what a provider's AuthorizedConsumer commits: the keys
// that alone may hold an identity for ConsumerID, and the request to
// grant, its CSR and signature.
type Commitment struct {
	ConsumerID string
	Keys       []crypto.PublicKey
	CSR        []byte
	Signature  []byte
	// HandOver is the request's cluster key hand-over, nil when it carries
	// none.
	HandOver *HandOver
	// Policy bounds what the consumer gets, beside the provider's own
	// bounds.
	Policy Policy
}

// Policy is a commitment's bounds on its consumer's ResourceSlices; nil
// (or false) leaves the provider's bound alone. Its zero value is no
// policy, and no field can widen what the provider grants.
type Policy struct {
	MaxSlices           *int
	CertificatesPerHour *int
	// NoSliceClusterWideRole withholds the cluster-wide slice ClusterRole
	// (rbac.ResourceSliceClusterRoleBinding) from the consumer's slice
	// identities: spec.policy.resourceSliceClusterWideRole false.
	NoSliceClusterWideRole bool
}

// SliceClusterWideRole reports whether the consumer's slice identities are
// bound to the cluster-wide slice role, where the provider binds it
// (providerBinds): never where the provider does not, and not where p
// withholds it.
func (p Policy) SliceClusterWideRole(providerBinds bool) bool {
	return providerBinds && !p.NoSliceClusterWideRole
}

// Tighten returns b with c's policy applied: each bound the policy sets
// holds where it is tighter than b's (b as resourceslice.Bounds.WithDefaults
// returns it: a negative count is no bound).
func (p Policy) Tighten(b resourceslice.Bounds) resourceslice.Bounds {
	tighter := func(have int, want *int) int {
		if want == nil || have >= 0 && have <= *want {
			return have
		}
		return *want
	}
	b.MaxSlices = tighter(b.MaxSlices, p.MaxSlices)
	b.CertificatesPerHour = tighter(b.CertificatesPerHour, p.CertificatesPerHour)
	return b
}

// Request returns c's request, as made to provider providerID.
func (c *Commitment) Request(providerID string) *Request {
	return &Request{ProviderID: providerID, ConsumerID: c.ConsumerID, CSR: bytes.Clone(c.CSR), Signature: bytes.Clone(c.Signature), HandOver: c.HandOver}
}

// FromAuthorizedConsumer parses ac into its Commitment. It checks the form
// of every field (the CRD's schema checks most of them already) and
// nothing else: Verify checks the request.
func FromAuthorizedConsumer(ac *peeringv1alpha1.AuthorizedConsumer) (*Commitment, error) {
	if err := clusterid.Validate(ac.Spec.ClusterID); err != nil {
		return nil, fmt.Errorf("%w: spec.clusterID: %w", ErrMalformed, err)
	}
	if ac.Name != ac.Spec.ClusterID {
		return nil, fmt.Errorf("%w: metadata.name %q is not spec.clusterID %q", ErrMalformed, ac.Name, ac.Spec.ClusterID)
	}
	pubs, err := ParseKeys(ac.Spec.PublicKeys)
	if err != nil {
		return nil, fmt.Errorf("%w: spec.publicKeys: %w", ErrMalformed, err)
	}
	req := ac.Spec.Request
	if len(req.CSR) == 0 || len(req.CSR) > csr.MaxSize || len(req.Signature) == 0 || len(req.Signature) > tenant.MaxSignatureSize {
		return nil, fmt.Errorf("%w: spec.request: CSR of %d bytes, signature of %d", ErrMalformed, len(req.CSR), len(req.Signature))
	}
	handOver, err := handOverFromAPI(req.HandOver)
	if err != nil {
		return nil, fmt.Errorf("spec.request: %w", err)
	}
	c := &Commitment{ConsumerID: ac.Spec.ClusterID, Keys: pubs, CSR: []byte(req.CSR), Signature: bytes.Clone(req.Signature), HandOver: handOver}
	if pol := ac.Spec.Policy; pol != nil {
		count := func(field string, v *int32) (*int, error) {
			if v == nil {
				return nil, nil
			}
			if *v < 0 {
				return nil, fmt.Errorf("%w: spec.policy.%s: %d is negative", ErrMalformed, field, *v)
			}
			n := int(*v)
			return &n, nil
		}
		var err error
		if c.Policy.MaxSlices, err = count("maxResourceSlices", pol.MaxResourceSlices); err != nil {
			return nil, err
		}
		if c.Policy.CertificatesPerHour, err = count("resourceSliceCertificatesPerHour", pol.ResourceSliceCertificatesPerHour); err != nil {
			return nil, err
		}
		c.Policy.NoSliceClusterWideRole = pol.ResourceSliceClusterWideRole != nil && !*pol.ResourceSliceClusterWideRole
	}
	return c, nil
}

// MaxKeys is how many keys an object of this package commits at most: one,
// and its successor while a rotation overlaps.
const MaxKeys = 2

// ParseKeys parses PKIX PEM public keys, one to MaxKeys of them.
func ParseKeys(pems []string) ([]crypto.PublicKey, error) {
	if len(pems) == 0 || len(pems) > MaxKeys {
		return nil, fmt.Errorf("%w: %d keys, want 1 to %d", ErrMalformed, len(pems), MaxKeys)
	}
	out := make([]crypto.PublicKey, 0, len(pems))
	for i, p := range pems {
		pub, err := keys.ParsePublicKey([]byte(p))
		if err != nil {
			return nil, fmt.Errorf("key %d: %w", i, err)
		}
		out = append(out, pub)
	}
	return out, nil
}

// Holds reports whether pub is one of c's keys.
func (c *Commitment) Holds(pub crypto.PublicKey) bool {
	for _, k := range c.Keys {
		if keys.Equal(k, pub) {
			return true
		}
	}
	return false
}

// Check returns nil when pub may hold an identity for c's consumer, and
// otherwise an error wrapping ErrNotCommitted.
func (c *Commitment) Check(pub crypto.PublicKey) error {
	if c.Holds(pub) {
		return nil
	}
	return fmt.Errorf("%w: %s is not among the %d keys committed for %s", ErrNotCommitted, keys.Fingerprint(pub), len(c.Keys), c.ConsumerID)
}

// Verify checks c's request to provider providerID: signed over its
// transcript by one of c's keys, for a ControlPlane CSR of c's consumer
// for a key that is none of c's keys (no committed cluster key may become
// a TLS key). A request that carries a hand-over must carry one that
// verifies (ErrBadHandOver); it counts only while c commits its previous
// key too, which then vouches for the key that signed. It returns what
// tenant.Verify returns for a Tenant, with the cluster key that signed
// and, for a hand-over that counts, the previous key and the identity key
// it held as HandedOver.
func (c *Commitment) Verify(providerID string) (*tenant.Verified, error) {
	msg := c.Request(providerID).transcript()
	var signer crypto.PublicKey
	for _, k := range c.Keys {
		if keys.VerifyMessage(k, msg, c.Signature) == nil {
			signer = k
			break
		}
	}
	if signer == nil {
		return nil, fmt.Errorf("%w: no committed key of %s signed it for provider %s", ErrBadRequest, c.ConsumerID, providerID)
	}
	checked, err := csr.Check(c.CSR, csr.ControlPlanePolicy(c.ConsumerID, nil))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	// Neither the key that signed nor its committed successor (or
	// predecessor) may become a TLS key.
	if c.Holds(checked.PublicKey()) {
		return nil, ErrClusterKeyCSR
	}
	v := &tenant.Verified{ClusterID: c.ConsumerID, PublicKey: signer, CSR: checked}
	if h := c.HandOver; h != nil {
		if err := h.verify(providerID, c.ConsumerID, signer); err != nil {
			return nil, err
		}
		if keys.Equal(h.From, checked.PublicKey()) {
			return nil, ErrClusterKeyCSR
		}
		if c.Holds(h.From) {
			v.HandedOver = []crypto.PublicKey{h.From}
			if h.Held != nil {
				v.HandedOver = append(v.HandedOver, h.Held)
			}
		}
	}
	return v, nil
}

// Tenant returns the Tenant a provider records for c's request, verified
// as v (Verify): the consumer's Tenant as a Liqo provider stores it, its
// signature the request's. Enrolled recognises it.
func (c *Commitment) Tenant(v *tenant.Verified) (*authv1beta1.Tenant, error) {
	pub, err := keys.MarshalPublicKey(v.PublicKey)
	if err != nil {
		return nil, err
	}
	return &authv1beta1.Tenant{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.SchemeGroupVersion.String(), Kind: authv1beta1.TenantKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:      c.ConsumerID,
			Namespace: clusterid.TenantNamespace(c.ConsumerID),
			Labels:    map[string]string{clusterid.Label: c.ConsumerID},
		},
		Spec: authv1beta1.TenantSpec{
			ClusterID:       c.ConsumerID,
			AuthzPolicy:     authv1beta1.KeysExchange,
			PublicKey:       pub,
			CSR:             bytes.Clone(c.CSR),
			Signature:       bytes.Clone(c.Signature),
			TenantCondition: authv1beta1.TenantConditionActive,
		},
	}, nil
}

// Enrolled reports whether t is the Tenant of c's request: its CSR and
// signature are the committed ones. Such a Tenant is verified by
// VerifyTenant, with no nonce; any other Tenant of c's consumer by its
// nonce.
func (c *Commitment) Enrolled(t *authv1beta1.Tenant) bool {
	return bytes.Equal(t.Spec.CSR, c.CSR) && bytes.Equal(t.Spec.Signature, c.Signature)
}

// VerifyTenant verifies t, an Enrolled Tenant whose cluster key is pub,
// by c's request to provider providerID (Verify): pub must be the key
// that signed it.
func (c *Commitment) VerifyTenant(t *authv1beta1.Tenant, pub crypto.PublicKey, providerID string) (*tenant.Verified, error) {
	if !c.Enrolled(t) {
		return nil, fmt.Errorf("%w: the Tenant is not the committed request", ErrBadRequest)
	}
	v, err := c.Verify(providerID)
	if err != nil {
		return nil, err
	}
	if !keys.Equal(v.PublicKey, pub) {
		return nil, fmt.Errorf("%w: the Tenant's key did not sign the committed request", ErrBadRequest)
	}
	return v, nil
}

// Commitments reads a provider's commitments (its AuthorizedConsumers).
// Commitment returns the one for consumerID, nil and nil when there is
// none; an object that does not parse is an error wrapping ErrMalformed,
// so that no flow grants the ID while it stands.
type Commitments interface {
	Commitment(ctx context.Context, consumerID string) (*Commitment, error)
}
