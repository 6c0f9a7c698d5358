// Package renewal decides when certificates are renewed, and builds and
// checks the Renew objects through which a consumer asks its provider for a
// renewed ControlPlane certificate.
//
// Two schedules exist. A provider re-signs every certificate it issued
// between half and two thirds of its lifetime (ProviderDeadline), at a
// point drawn from the certificate itself, so that certificates issued
// together are not all re-signed at once (Liqo's providers re-sign at
// exactly two thirds), and hands the new certificate out in the Tenant's
// status, in each Renew and in each ResourceSlice's status. A kubepact consumer that keeps one TLS key
// per identity (a Strict consumer) does better: at a jittered 70–90 % of the
// lifetime (Deadline), as client-go's certificate manager does, it makes a
// fresh key, stores it, and asks for a certificate for it through its
// Renew's spec.csr; it switches to the new key only once the certificate is
// verified, and deletes the old key after.
//
// # Security
//
// A Renew reaches the provider through the consumer's ControlPlane
// identity, which may write Renews in its own tenant namespace only. Check
// refuses one anywhere else, one naming another consumer than its
// namespace's, and one asking for another identity than the ControlPlane's,
// so a consumer cannot obtain a certificate for another CN, O or consumer:
// the provider checks spec.csr against the exact ControlPlane policy of the
// consumer the namespace belongs to (csr.ControlPlanePolicy), never against
// what the Renew claims.
//
// # Errors
//
// Provider.Renew refuses a new key before EarliestNewKey with a
// *TooEarlyError, so a consumer cannot make its provider sign for key after
// key: at most two certificates per lifetime. What the consumer holds is
// read from the provider's own records (RecordKey, and the Tenant's
// status), never from the Renew's status, which the consumer may write.
//
// Check wraps ErrForeign for a Renew that is not the ControlPlane Renew of
// the consumer whose tenant namespace holds it, ErrUnsupported for an
// identity type this package does not renew, and ErrMalformed for fields
// that do not parse. Deadline returns the reader's error. A Store wraps
// ErrNotFound.
package renewal

import (
	"context"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
)

var (
	// ErrForeign reports a Renew that is not the ControlPlane Renew of the
	// consumer whose tenant namespace holds it: misplaced, misnamed, or
	// naming another consumer.
	ErrForeign = errors.New("renew is not the consumer's own")
	// ErrUnsupported reports a Renew for an identity type that is not
	// renewed through Renews here (ResourceSlice certificates arrive in the
	// slice's status).
	ErrUnsupported = errors.New("renew asks for an identity type not renewed through renews")
	// ErrMalformed reports a Renew whose fields do not parse.
	ErrMalformed = errors.New("malformed renew")
	// ErrNotFound reports that a Store holds no Renew of that name.
	ErrNotFound = errors.New("renew not found")
	// ErrNotAccepted reports a Renew of a consumer whose Tenant the provider
	// has not accepted (no Tenant, or no certificate in its status yet).
	ErrNotAccepted = errors.New("no accepted tenant for the renew's consumer")
	// ErrDrained reports a Renew of a consumer whose Tenant is Drained: its
	// certificates are not renewed.
	ErrDrained = errors.New("the renew's consumer is drained")
	// ErrTooEarly reports a Renew asking for a certificate for a new key
	// before half the lifetime of the certificate it holds (see
	// TooEarlyError).
	ErrTooEarly = errors.New("renew asks for a new key too early")
)

// TooEarlyError reports a Renew asking for a certificate for a new key
// before Until, half-way through the lifetime of the certificate its
// consumer holds: a consumer renews at 70–90 %, so asking earlier is a
// consumer making the provider sign for key after key. It wraps
// ErrTooEarly.
type TooEarlyError struct {
	// Until is when the Renew may be answered.
	Until time.Time
}

func (e *TooEarlyError) Error() string {
	return fmt.Sprintf("%v: not before %s", ErrTooEarly, e.Until.UTC().Format(time.RFC3339))
}

func (e *TooEarlyError) Unwrap() error { return ErrTooEarly }

// EarliestNewKey returns when a provider signs a certificate for a new key
// for a consumer that holds cert: half-way through cert's lifetime.
func EarliestNewKey(cert *x509.Certificate) time.Time {
	return cert.NotBefore.Add(cert.NotAfter.Sub(cert.NotBefore) / 2)
}

// RecordKey is where a provider records the last certificate it gave
// through the Renew of consumerID (one it issued for the Renew's key, or
// the Tenant's), in its csr.Cache: Secret "liqo-remote-certificate--renew"
// in the consumer's tenant namespace. It is the certificate the consumer
// holds, from which EarliestNewKey is counted. No ResourceSlice can share
// the key (a slice's name never starts with "-"), and no identity a
// consumer holds may read or write Secrets in its tenant namespace on the
// provider, so the record is the provider's alone; the Renew's status,
// which the consumer's ControlPlane identity may write, is never taken for
// it.
func RecordKey(consumerID string) csr.CacheKey {
	return csr.CacheKey{ConsumerID: consumerID, Slice: recordSlice}
}

// recordSlice is the CacheKey.Slice of RecordKey: not a valid object name,
// so never a ResourceSlice's.
const recordSlice = "-renew"

// Labels of a Renew, as Liqo's CRD replicator reads and writes them.
const (
	// ReplicationLabel marks, on the consumer, an object to replicate to the
	// provider named by RemoteIDLabel.
	ReplicationLabel = "liqo.io/replication"
	// RemoteIDLabel names, on the consumer, the provider an object is
	// replicated to.
	RemoteIDLabel = "liqo.io/remoteID"
	// ReplicatedLabel marks, on the provider, an object replicated from a
	// consumer.
	ReplicatedLabel = "liqo.io/replicated"
	// OriginIDLabel names, on the provider, the consumer a replicated object
	// comes from.
	OriginIDLabel = "liqo.io/originID"
)

// Jitter bounds of Deadline, in thousandths of a certificate's lifetime.
const (
	MinJitterPermille = 700
	MaxJitterPermille = 900
)

// Store keeps Renews.
//
// Get returns the Renew namespace/name, or an error wrapping ErrNotFound.
// Apply creates r or sets its spec, labels and owner references on the
// stored one, as a server-side apply under kubepact's field manager does
// (what others set stays), and sets its status too unless r's status is the
// zero value (then the stored status is kept); it returns what is stored.
// Delete deletes the Renew and succeeds when there is none.
// Implementations are safe for concurrent use.
type Store interface {
	Get(ctx context.Context, namespace, name string) (*authv1beta1.Renew, error)
	Apply(ctx context.Context, r *authv1beta1.Renew) (*authv1beta1.Renew, error)
	Delete(ctx context.Context, namespace, name string) error
}

// ProviderDeadline returns when a provider re-signs cert (csr.RenewAt):
// between half its lifetime (EarliestNewKey) and two thirds, Liqo's point,
// at a fraction drawn from cert, the same wherever and whenever it is read.
// It comes before a Strict consumer's own Deadline, at 70–90 %.
func ProviderDeadline(cert *x509.Certificate) time.Time { return csr.RenewAt(cert) }

// Deadline returns when a consumer renews cert with a fresh key: at a
// fraction of its lifetime drawn uniformly, from rnd, between
// MinJitterPermille and MaxJitterPermille thousandths, so that consumers
// whose certificates were issued together do not all renew at once.
func Deadline(cert *x509.Certificate, rnd io.Reader) (time.Time, error) {
	var b [8]byte
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return time.Time{}, fmt.Errorf("renewal deadline: reading randomness: %w", err)
	}
	const span = MaxJitterPermille - MinJitterPermille
	// A uniform fraction of the span, in millionths of the lifetime.
	millionths := MinJitterPermille*1000 + binary.BigEndian.Uint64(b[:])%(span*1000+1)
	life := cert.NotAfter.Sub(cert.NotBefore)
	return cert.NotBefore.Add(time.Duration(float64(life) * float64(millionths) / 1e6)), nil
}

// Wait returns how long to wait at now for at, never less than floor: a
// deadline already past is looked at again after floor, not in a hot loop.
func Wait(at, now time.Time, floor time.Duration) time.Duration {
	return max(at.Sub(now), floor)
}

// NextKeyName is the name, in a consumer's keys.Keyring, of the key that the
// identity keyed name is being renewed to: it is stored there before its CSR
// leaves, and becomes the identity's key once a certificate for it is
// verified.
func NextKeyName(name string) string { return name + "-next" }

// Name is the name of the Renew of the ControlPlane identity for providerID:
// the Identity's own.
func Name(providerID string) string { return identity.ControlPlaneName(providerID) }

// ForControlPlane returns the Renew that consumer consumerID keeps, in its
// tenant namespace for the provider, for its ControlPlane Identity id, as a
// Liqo consumer does: same name, owned by id, labelled for replication to
// the provider, with spec.consumerClusterID and spec.identityType only.
// id must be stored (it has a UID).
func ForControlPlane(consumerID string, id *authv1beta1.Identity) *authv1beta1.Renew {
	providerID := id.Spec.ClusterID
	yes := true
	return &authv1beta1.Renew{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.SchemeGroupVersion.String(), Kind: authv1beta1.RenewKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:      Name(providerID),
			Namespace: clusterid.TenantNamespace(providerID),
			Labels: map[string]string{
				ReplicationLabel: "true",
				RemoteIDLabel:    providerID,
				clusterid.Label:  providerID,
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         authv1beta1.SchemeGroupVersion.String(),
				Kind:               authv1beta1.IdentityKind,
				Name:               id.Name,
				UID:                id.UID,
				Controller:         &yes,
				BlockOwnerDeletion: &yes,
			}},
		},
		Spec: authv1beta1.RenewSpec{
			ConsumerClusterID: consumerID,
			IdentityType:      authv1beta1.ControlPlaneIdentityType,
		},
	}
}

// Check checks, on provider providerID, that r is the ControlPlane Renew of
// the consumer whose tenant namespace holds it, and returns that consumer's
// ID. The namespace decides who the consumer is: spec.consumerClusterID must
// name the same one (ErrForeign), and the name must be the one a consumer
// gives the Renew of its ControlPlane Identity for providerID (ErrForeign).
// spec.identityType must be ControlPlane or empty (ErrUnsupported), and
// spec.csr and spec.publicKey come together or not at all (ErrMalformed).
func Check(r *authv1beta1.Renew, providerID string) (string, error) {
	consumerID, ok := strings.CutPrefix(r.Namespace, clusterid.TenantNamespacePrefix)
	if !ok || clusterid.Validate(consumerID) != nil {
		return "", fmt.Errorf("%w: Renew %s/%s is not in a tenant namespace", ErrForeign, r.Namespace, r.Name)
	}
	if r.Spec.ConsumerClusterID != consumerID {
		return "", fmt.Errorf("%w: Renew %s/%s names consumer %q, its namespace is consumer %q's",
			ErrForeign, r.Namespace, r.Name, truncate(r.Spec.ConsumerClusterID), consumerID)
	}
	if r.Name != Name(providerID) {
		return "", fmt.Errorf("%w: Renew %s/%s, want %q", ErrForeign, r.Namespace, r.Name, Name(providerID))
	}
	switch r.Spec.IdentityType {
	case authv1beta1.ControlPlaneIdentityType, "":
	default:
		return "", fmt.Errorf("%w: Renew %s/%s: identity type %q", ErrUnsupported, r.Namespace, r.Name, truncate(string(r.Spec.IdentityType)))
	}
	if (len(r.Spec.CSR) == 0) != (len(r.Spec.PublicKey) == 0) {
		return "", fmt.Errorf("%w: Renew %s/%s: spec.csr and spec.publicKey come together", ErrMalformed, r.Namespace, r.Name)
	}
	return consumerID, nil
}

// Changed reports whether status carries a certificate other than the one
// held: one worth verifying and, if it passes, switching to.
func Changed(held []byte, status *authv1beta1.RenewStatus) bool {
	if status == nil || status.AuthParams == nil || len(status.AuthParams.SignedCRT) == 0 {
		return false
	}
	return string(status.AuthParams.SignedCRT) != string(held)
}

// truncate bounds a peer's string quoted in an error.
func truncate(s string) string {
	if len(s) > 63 {
		return s[:63] + "…"
	}
	return s
}
