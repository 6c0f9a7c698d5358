// Package lifecycle holds what a provider does to a tenant after its
// handshake: cordon, uncordon, drain, and the revocation record that keeps
// a drained or revoked consumer from being bound again while certificates
// issued to it are still valid.
//
// Deleting a Tenant is one of two things. An unpeering (the consumer
// deletes its Tenant, liqoctl or kubepact unauthenticate) removes the
// consumer's bindings and lets the same cluster key peer again at once, as
// Liqo does; no revocation record is written, and one already in force
// stays. A revocation (a drained Tenant deleted, a Tenant carrying
// RevokeAnnotation, kubepact unauthenticate --revoke) records the
// consumer's certificates as revoked.
//
// A Tenant's spec.tenantCondition is its administrative state (SPEC §7):
//
//   - Active: the consumer's identities work and new ResourceSlices are
//     accepted.
//   - Cordoned: every ResourceSlice in the consumer's tenant namespace
//     carries CordonAnnotation; no new slice is accepted, accepted ones
//     stay. Cordoning is allowed only from Active, uncordoning only from
//     Cordoned (Transition).
//   - Drained: every binding made for the consumer is deleted (see
//     ConsumerBinding) and so are its ResourceSlices and NamespaceMaps, so
//     every certificate it holds is powerless at once. A Tenant may be
//     drained from any state, and a drained Tenant is never bound again.
//
// # Security
//
// Kubernetes cannot revoke a client certificate: it stays valid until its
// NotAfter, and is powerless only while nothing binds its user and groups.
// Binding the same consumer ID again, after a drain or a revocation, would
// give back to every certificate issued before, leaked ones included, what
// it had. So when a provider drains or revokes a consumer it records, per consumer ID, until when the certificates issued to it may be
// valid (a Revocation, see Until), and refuses to bind that consumer again
// before then with a *RevokedError, unless the provider's administrator
// deletes the record on purpose.
//
// Every flow that issues an identity for a consumer ID answers to the same
// decisions (Admit): the nonce handshake (Provider.Accept), the shared-token
// server (authserver), and ServiceAccount identities (saidentity.Issue,
// through Gate) refuse a consumer whose Tenant is Drained or whose
// revocation record is in force, before they write anything. The token
// server records a Tenant for its consumers (FlowAnnotation, authzPolicy
// TolerateNoHandshake), so cordon, drain and unauthenticate act on them as
// on any other.
//
// No flow silently shares a consumer ID (CheckHolder): while a key holds a
// live certificate for it, whatever flow issued it, a new identity for
// another key is refused with a *HeldError. Both would be the same
// Kubernetes user, and the first certificate cannot be revoked.
//
// A binding is deleted on drain only when it is one kubepact or Liqo made
// for that consumer: labelled for it, managed by Liqo, granting to nobody
// but the consumer's user and group (ConsumerBinding). A binding someone
// else labelled is left alone, so the label cannot make kubepact delete
// another's grant. A drain and a revocation also delete the bindings of the
// consumer's ServiceAccount identity (saidentity.IdentityBinding: labelled
// for it, granting to nobody but its ServiceAccount): its tokens are
// refreshed with TokenRequests sent to the API server, which no gate of the
// provider sees, so only removing what allows them stops a drained or
// revoked consumer from refreshing.
//
// # Errors
//
// Transition returns a *TransitionError wrapping ErrTransition. A drained
// Tenant is refused with ErrDrained, a revoked consumer with a
// *RevokedError wrapping ErrRevoked, a consumer ID another key holds with
// a *HeldError wrapping ErrIdentityHeld (its ConsumerID and the Flow that
// holds it). The ports' errors are documented on each.
//
// # Concurrency
//
// The functions here share no state; the ports' implementations must be
// safe for concurrent use.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/types"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/rbac"
)

// CordonAnnotation, with value "true", marks every ResourceSlice of a
// cordoned tenant, as Liqo's Tenant controller does.
const CordonAnnotation = "liqo.io/cordon-tenant"

var (
	// ErrTransition reports a change of tenantCondition the rules refuse.
	ErrTransition = errors.New("tenant condition transition refused")
	// ErrDrained reports a Tenant that was drained: it is never bound again.
	ErrDrained = errors.New("tenant is drained")
	// ErrRevoked reports a consumer whose certificates were revoked (by a
	// drain, or by a deletion that asked for it) and may still be valid.
	ErrRevoked = errors.New("consumer's certificates were revoked and may still be valid")
	// ErrNotFound reports that a port holds no such object.
	ErrNotFound = errors.New("not found")
	// ErrConflict reports a write refused because the object changed since
	// it was read.
	ErrConflict = errors.New("object changed since it was read")
)

// TransitionError reports a refused change of tenantCondition.
type TransitionError struct {
	From, To authv1beta1.TenantCondition
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("%v: %s to %s (cordon only from Active, uncordon only from Cordoned, drain from any condition)", ErrTransition, e.From, e.To)
}

func (e *TransitionError) Unwrap() error { return ErrTransition }

// Condition returns c with the API server's default: empty means Active.
func Condition(c authv1beta1.TenantCondition) authv1beta1.TenantCondition {
	if c == "" {
		return authv1beta1.TenantConditionActive
	}
	return c
}

// Transition checks the change of a Tenant's condition from from to to, by
// liqoctl's rules: Cordoned only from Active, Active (uncordon) only from
// Cordoned, Drained from any condition. A change to the condition a Tenant
// already has is refused too, except Drained to Drained: draining again
// resumes a drain that failed halfway. It returns a *TransitionError.
func Transition(from, to authv1beta1.TenantCondition) error {
	from, to = Condition(from), Condition(to)
	ok := false
	switch to {
	case authv1beta1.TenantConditionCordoned:
		ok = from == authv1beta1.TenantConditionActive
	case authv1beta1.TenantConditionActive:
		ok = from == authv1beta1.TenantConditionCordoned
	case authv1beta1.TenantConditionDrained:
		ok = true
	}
	if !ok {
		return &TransitionError{From: from, To: to}
	}
	return nil
}

// Binding is one RoleBinding (Namespace set) or ClusterRoleBinding
// (Namespace empty), as Bindings lists it.
type Binding struct {
	Namespace string
	Name      string
	// UID is the binding's UID: Delete deletes only that object, not one
	// recreated under the same name since it was listed.
	UID      types.UID
	Labels   map[string]string
	Subjects []rbacv1.Subject
}

func (b Binding) String() string {
	if b.Namespace == "" {
		return "ClusterRoleBinding " + b.Name
	}
	return "RoleBinding " + b.Namespace + "/" + b.Name
}

// ConsumerBinding reports whether b is a binding kubepact or Liqo made for
// consumerID, which a drain deletes: it carries clusterid.Label with value
// consumerID and rbac.ManagedByLabel with value rbac.ManagedByValue, and it
// has at least one subject, every one of them user consumerID or group
// consumerID. A binding that also grants to anyone else is not the
// consumer's, whoever labelled it.
func ConsumerBinding(b Binding, consumerID string) bool {
	if b.Labels[clusterid.Label] != consumerID || b.Labels[rbac.ManagedByLabel] != rbac.ManagedByValue || len(b.Subjects) == 0 {
		return false
	}
	for _, s := range b.Subjects {
		if s.APIGroup != rbacv1.GroupName || s.Name != consumerID || (s.Kind != rbacv1.UserKind && s.Kind != rbacv1.GroupKind) {
			return false
		}
	}
	return true
}

// Revocation records until when certificates issued to a consumer may be
// valid, after the provider drained or revoked it.
type Revocation struct {
	ConsumerID string
	// Until is the latest NotAfter a certificate issued to the consumer may
	// have (see Until).
	Until time.Time
	// Reason says why: ReasonDrained, ReasonRevoked or, in records written
	// before unpeering kept the consumer admitted, ReasonForgotten.
	Reason string
}

// Reasons of a Revocation.
const (
	// ReasonDrained: the provider's administrator drained the Tenant.
	ReasonDrained = "Drained"
	// ReasonRevoked: the Tenant was deleted with a revocation asked for
	// (RevokeAnnotation, or Provider.Revoke: kubepact unauthenticate
	// --revoke).
	ReasonRevoked = "Revoked"
	// ReasonForgotten: a Tenant deleted by an earlier kubepact, which
	// revoked on every deletion. Nothing writes it any more; records that
	// carry it are honoured.
	ReasonForgotten = "Forgotten"
)

// RevokeAnnotation, with value "true" on a Tenant before it is deleted,
// asks the provider to treat the deletion as a revocation rather than an
// unpeering: the consumer's certificates are recorded as revoked (a
// Revocation with ReasonRevoked), so nothing binds its consumer ID again
// until they expire or the administrator readmits it. A consumer whose key
// or certificate may have leaked sets it; any other value is an unpeering.
const RevokeAnnotation = "kubepact.io/revoke"

// RevokedError reports a consumer that may not be bound before Until.
type RevokedError struct {
	ConsumerID string
	Until      time.Time
	Reason     string
}

func (e *RevokedError) Error() string {
	return fmt.Sprintf("%v: consumer %s was %s; certificates issued to it may be valid until %s; it is bound again only after that, or once the provider's administrator readmits it",
		ErrRevoked, e.ConsumerID, e.Reason, e.Until.UTC().Format(time.RFC3339))
}

func (e *RevokedError) Unwrap() error { return ErrRevoked }

// Check returns a *RevokedError when r still forbids binding its consumer
// at now, and nil once now is past r.Until.
func (r Revocation) Check(now time.Time) error {
	if now.After(r.Until) {
		return nil
	}
	return &RevokedError{ConsumerID: r.ConsumerID, Until: r.Until, Reason: r.Reason}
}

// Until returns the latest NotAfter a certificate issued to a consumer may
// have, as known at now: the latest of known (the NotAfter of the
// certificates the provider still holds) and now + lifetime + skew, the
// latest end of any certificate issued until now for the lifetime the
// provider requests (csr.CheckIssued refuses a certificate that ends later).
// The bound covers certificates the provider holds no copy of (replaced
// ones, slice certificates whose cache Secret is gone) as long as the
// requested lifetime was never longer than lifetime.
func Until(now time.Time, lifetime, skew time.Duration, known ...time.Time) time.Time {
	until := now.Add(lifetime + skew)
	for _, t := range known {
		if t.After(until) {
			until = t
		}
	}
	return until.Truncate(time.Second).Add(time.Second)
}

// Conditions writes the condition of stored Tenants.
//
// SetCondition sets spec.tenantCondition of t's stored Tenant (by t's
// namespace and name) to c, provided the stored Tenant still has t's
// resourceVersion; it writes nothing else. It returns an error wrapping
// ErrConflict when the Tenant changed since t was read, and one wrapping
// tenant.ErrNotFound when there is none. Implementations are safe for
// concurrent use.
type Conditions interface {
	SetCondition(ctx context.Context, t *authv1beta1.Tenant, c authv1beta1.TenantCondition) error
}

// Slices acts on every ResourceSlice in one tenant namespace.
//
// SetCordoned adds CordonAnnotation with value "true" to every
// ResourceSlice in namespace (cordoned true) or removes it (false), and
// writes nothing else: other annotations, labels, spec and status stay. It
// never creates a slice, and succeeds when there are none. DeleteAll deletes every ResourceSlice
// in namespace and, when the API server serves offloading.liqo.io
// NamespaceMaps, every NamespaceMap there; it succeeds when there are none
// or the API is not served. Implementations are safe for concurrent use.
type Slices interface {
	SetCordoned(ctx context.Context, namespace string, cordoned bool) error
	DeleteAll(ctx context.Context, namespace string) error
}

// Bindings finds and deletes the RBAC bindings labelled for a consumer.
//
// ListBindings returns every RoleBinding, in any namespace, and every
// ClusterRoleBinding labelled clusterid.Label=consumerID, whoever made it:
// callers filter with ConsumerBinding. DeleteBinding deletes b only if the
// object of b's name still has b's UID, and succeeds when it is gone or was
// replaced by another. Implementations are safe for concurrent use.
type Bindings interface {
	ListBindings(ctx context.Context, consumerID string) ([]Binding, error)
	DeleteBinding(ctx context.Context, b Binding) error
}

// Revocations keeps one Revocation per consumer on the provider.
//
// Get returns the Revocation of consumerID, or an error wrapping
// ErrNotFound. Put stores r, replacing the consumer's previous one. Delete
// removes it and succeeds when there is none. Implementations are safe for
// concurrent use and keep records durably (they outlive the Tenant).
type Revocations interface {
	Get(ctx context.Context, consumerID string) (Revocation, error)
	Put(ctx context.Context, r Revocation) error
	Delete(ctx context.Context, consumerID string) error
}

// Ports are the provider's lifecycle ports. All are required.
type Ports struct {
	Conditions  Conditions
	Slices      Slices
	Bindings    Bindings
	Revocations Revocations
}

// Complete reports whether every port is set.
func (p Ports) Complete() bool {
	return p.Conditions != nil && p.Slices != nil && p.Bindings != nil && p.Revocations != nil
}
