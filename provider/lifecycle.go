package provider

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"slices"
	"time"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/saidentity"
	"github.com/kubepact/kubepact/step"
	"github.com/kubepact/kubepact/tenant"
)

// minIssuedLifetime is the shortest lifetime csr.CheckIssued lets a
// certificate have, whatever was requested: the CSR API's ten minutes.
const minIssuedLifetime = 10 * time.Minute

// conditionRetries bounds how often a condition change is retried when the
// Tenant changes under it.
const conditionRetries = 5

// Cordon sets the condition of consumerID's Tenant to Cordoned, which it
// must be Active to allow, and marks every ResourceSlice in its tenant
// namespace with lifecycle.CordonAnnotation: no new slice is accepted,
// accepted ones stay. A refused change returns a *lifecycle.TransitionError;
// an unknown consumer an error wrapping tenant.ErrNotFound.
func (p *Provider) Cordon(ctx context.Context, consumerID string) error {
	return p.setCondition(ctx, consumerID, authv1beta1.TenantConditionCordoned)
}

// Uncordon sets the condition of consumerID's Tenant back to Active, which
// it must be Cordoned to allow, and removes lifecycle.CordonAnnotation from
// its ResourceSlices. Errors are Cordon's.
func (p *Provider) Uncordon(ctx context.Context, consumerID string) error {
	return p.setCondition(ctx, consumerID, authv1beta1.TenantConditionActive)
}

// Drain sets the condition of consumerID's Tenant to Drained, from any
// condition, and enforces it (see Enforce): every certificate issued to the
// consumer is recorded as revoked, and its bindings, those of its
// ServiceAccount identity included, and its ResourceSlices are deleted. Draining a drained Tenant again resumes a drain that failed
// halfway. A drained Tenant is never bound again; Accept refuses it with
// lifecycle.ErrDrained. An unknown consumer returns an error wrapping
// tenant.ErrNotFound.
func (p *Provider) Drain(ctx context.Context, consumerID string) error {
	return p.setCondition(ctx, consumerID, authv1beta1.TenantConditionDrained)
}

// setCondition moves the Tenant of consumerID to condition to, checking the
// transition against the condition it reads and writing only if the Tenant
// did not change since, then enforces it.
func (p *Provider) setCondition(ctx context.Context, consumerID string, to authv1beta1.TenantCondition) error {
	if err := clusterid.Validate(consumerID); err != nil {
		return err
	}
	namespace := clusterid.TenantNamespace(consumerID)
	for attempt := 1; ; attempt++ {
		t, err := p.ports.Tenants.Get(ctx, namespace, consumerID)
		if err != nil {
			return stepError(step.TenantCondition, err)
		}
		if err := lifecycle.Transition(t.Spec.TenantCondition, to); err != nil {
			return stepError(step.TenantCondition, err)
		}
		if lifecycle.Condition(t.Spec.TenantCondition) != to {
			err = p.ports.Lifecycle.Conditions.SetCondition(ctx, t, to)
			if errors.Is(err, lifecycle.ErrConflict) && attempt < conditionRetries {
				continue
			}
			if err != nil {
				return stepError(step.TenantCondition, err)
			}
			t.Spec.TenantCondition = to
		}
		p.step(ctx, step.Done{Name: step.TenantCondition})
		return p.Enforce(ctx, t)
	}
}

// Enforce brings what the provider holds for the stored Tenant t in line
// with its condition, however it was set (Cordon, or an administrator's
// edit that the Tenant reconciler sees): Active removes
// lifecycle.CordonAnnotation from the ResourceSlices in t's tenant
// namespace; Cordoned adds it; Drained records every certificate issued to
// the consumer as revoked (see Readmit) and deletes the bindings of its
// ServiceAccount identity (saidentity.IdentityBinding), then deletes the
// consumer's ControlPlane RoleBinding, every binding
// lifecycle.ConsumerBinding finds for it, and its ResourceSlices and
// NamespaceMaps. Each is idempotent, so
// Enforce resumes after a failure halfway. Bindings labelled for the
// consumer that are not its own are left alone.
func (p *Provider) Enforce(ctx context.Context, t *authv1beta1.Tenant) error {
	consumerID := t.Spec.ClusterID
	if err := clusterid.Validate(consumerID); err != nil || t.Name != consumerID || t.Namespace != clusterid.TenantNamespace(consumerID) {
		return stepError(step.TenantCondition, &tenant.FieldError{Tenant: t.Name, Field: "spec.clusterID",
			Err: fmt.Errorf("%w: a Tenant is named after its cluster ID and lives in its tenant namespace", clusterid.ErrInvalid)})
	}
	namespace := clusterid.TenantNamespace(consumerID)
	switch c := lifecycle.Condition(t.Spec.TenantCondition); c {
	case authv1beta1.TenantConditionActive, authv1beta1.TenantConditionCordoned:
		cordoned := c == authv1beta1.TenantConditionCordoned
		name := step.TenantActive
		if cordoned {
			name = step.TenantCordoned
		}
		if err := p.ports.Lifecycle.Slices.SetCordoned(ctx, namespace, cordoned); err != nil {
			return stepError(name, err)
		}
		p.step(ctx, step.Done{Name: name})
		return nil
	case authv1beta1.TenantConditionDrained:
		return p.drain(ctx, t)
	default:
		return stepError(step.TenantCondition, &tenant.FieldError{Tenant: t.Name, Field: "spec.tenantCondition",
			Err: &lifecycle.TransitionError{From: c, To: c}})
	}
}

// drain revokes, then removes every grant to the consumer of t.
func (p *Provider) drain(ctx context.Context, t *authv1beta1.Tenant) error {
	consumerID := t.Spec.ClusterID
	namespace := clusterid.TenantNamespace(consumerID)
	if err := p.revoke(ctx, consumerID, lifecycle.ReasonDrained); err != nil {
		return err
	}
	if err := p.ports.RBAC.DeleteRoleBinding(ctx, namespace, rbac.BindingName(rbac.ControlPlaneClusterRoleName)); err != nil {
		return stepError(step.TenantDrained, err)
	}
	if err := p.deleteBindings(ctx, consumerID, lifecycle.ConsumerBinding); err != nil {
		return stepError(step.TenantDrained, err)
	}
	if err := p.ports.Lifecycle.Slices.DeleteAll(ctx, namespace); err != nil {
		return stepError(step.TenantDrained, err)
	}
	p.step(ctx, step.Done{Name: step.TenantDrained})
	return nil
}

// deleteBindings deletes the bindings labelled for consumerID that match
// says are the consumer's: RoleBindings first, then ClusterRoleBindings, so
// that a failure on a cluster-wide binding leaves no namespaced grant
// behind it.
func (p *Provider) deleteBindings(ctx context.Context, consumerID string, match func(lifecycle.Binding, string) bool) error {
	bindings, err := p.ports.Lifecycle.Bindings.ListBindings(ctx, consumerID)
	if err != nil {
		return err
	}
	slices.SortStableFunc(bindings, func(a, b lifecycle.Binding) int {
		switch {
		case a.Namespace != "" && b.Namespace == "":
			return -1
		case a.Namespace == "" && b.Namespace != "":
			return 1
		}
		return 0
	})
	for _, b := range bindings {
		if !match(b, consumerID) {
			continue
		}
		if err := p.ports.Lifecycle.Bindings.DeleteBinding(ctx, b); err != nil {
			return err
		}
	}
	return nil
}

// revoke takes back what the provider issued to consumerID, on a drain or
// a revocation: it records until when the certificates issued to it may be
// valid (recordRevocation), and deletes the bindings of its ServiceAccount
// identity (saidentity.IdentityBinding). A record stops no ServiceAccount
// token: the consumer refreshes its token with a TokenRequest it sends to
// the API server itself, which only those bindings allow, and which no
// lifecycle check of the provider sees. Without them its tokens may do
// nothing, and its Refresher fails with saidentity.ErrRevoked.
func (p *Provider) revoke(ctx context.Context, consumerID, reason string) error {
	if err := p.recordRevocation(ctx, consumerID, reason); err != nil {
		return err
	}
	if err := p.deleteBindings(ctx, consumerID, saidentity.IdentityBinding); err != nil {
		return stepError(step.Revoked, err)
	}
	return nil
}

// recordRevocation records until when the certificates issued to
// consumerID may be valid (lifecycle.Until), when the provider holds one it
// issued: its Tenant has a certificate in its status, or one is cached. A
// record already there is only ever extended.
func (p *Provider) recordRevocation(ctx context.Context, consumerID, reason string) error {
	namespace := clusterid.TenantNamespace(consumerID)
	var known []time.Time
	issued := false
	t, err := p.ports.Tenants.Get(ctx, namespace, consumerID)
	switch {
	case err == nil && t.Status.AuthParams != nil && len(t.Status.AuthParams.SignedCRT) > 0:
		issued = true
		if leaf, err := csr.ParseCertificate(t.Status.AuthParams.SignedCRT); err == nil {
			known = append(known, leaf.NotAfter)
		}
	case err != nil && !errors.Is(err, tenant.ErrNotFound):
		return stepError(step.Revoked, err)
	}
	e, err := p.ports.Certificates.Get(ctx, csr.CacheKey{ConsumerID: consumerID})
	switch {
	case err == nil:
		issued = true
		if leaf, err := csr.ParseCertificate(e.Certificate); err == nil {
			known = append(known, leaf.NotAfter)
		}
	case !errors.Is(err, csr.ErrNotFound):
		return stepError(step.Revoked, err)
	}
	if !issued {
		return nil // nothing issued since the consumer was last revoked, if ever
	}
	prev, err := p.ports.Lifecycle.Revocations.Get(ctx, consumerID)
	switch {
	case err == nil:
		known = append(known, prev.Until)
	case !errors.Is(err, lifecycle.ErrNotFound):
		return stepError(step.Revoked, err)
	}
	lifetime := max(p.opts.CertificateLifetime, minIssuedLifetime)
	r := lifecycle.Revocation{
		ConsumerID: consumerID,
		Until:      lifecycle.Until(p.opts.Clock.Now(), lifetime, csr.IssuedSkew, known...),
		Reason:     reason,
	}
	if err == nil && r.Until.Equal(prev.Until) && prev.Reason == reason {
		return nil
	}
	if err := p.ports.Lifecycle.Revocations.Put(ctx, r); err != nil {
		return stepError(step.Revoked, err)
	}
	p.step(ctx, step.Done{Name: step.Revoked})
	return nil
}

// Readmit deletes the revocation record of consumerID, so that a Tenant
// for it may be bound again before every certificate issued to it earlier
// expired: those certificates regain what the new binding grants. It is
// the provider administrator's decision (kubepact readmit tenant). A drained
// Tenant stays refused until it is deleted. Readmitting a consumer without
// a record succeeds.
func (p *Provider) Readmit(ctx context.Context, consumerID string) error {
	if err := clusterid.Validate(consumerID); err != nil {
		return err
	}
	if err := p.ports.Lifecycle.Revocations.Delete(ctx, consumerID); err != nil {
		return stepError(step.Readmitted, err)
	}
	p.step(ctx, step.Done{Name: step.Readmitted})
	return nil
}

// Revocation returns the revocation record of consumerID, or an error
// wrapping lifecycle.ErrNotFound.
func (p *Provider) Revocation(ctx context.Context, consumerID string) (lifecycle.Revocation, error) {
	if err := clusterid.Validate(consumerID); err != nil {
		return lifecycle.Revocation{}, err
	}
	return p.ports.Lifecycle.Revocations.Get(ctx, consumerID)
}

// unpeeredHolder reports whether the nonce of consumerID is marked as kept
// by an unpeering for a key among claim, and names the key of the
// certificate in cached: then that certificate is the claim's, not
// another holder's (accept.Facts.HeldAfterUnpeering). After an unpeering
// there is no accepted Tenant to say which cluster key holds the cached
// certificate (none, or one stored by kubepact apply tenant that Accept
// has yet to fill); the nonce's mark does (see Forget): a claim of the key
// it names, over the very certificate it names, is the holder's, which
// lets a consumer whose certificate has a key of its own
// (consumer.TenantOptions.OwnKey, a Strict consumer) re-peer with its cluster key.
func (p *Provider) unpeeredHolder(ctx context.Context, consumerID string, cached *csr.CacheEntry, claim []crypto.PublicKey) (bool, error) {
	e, err := p.ports.Nonces.Get(ctx, consumerID)
	switch {
	case errors.Is(err, nonce.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	case e.Redemption == nil || e.Redemption.Unpeered == "" || e.Redemption.Key == "":
		return false, nil
	}
	leaf, err := csr.ParseCertificate(cached.Certificate)
	if err != nil || keys.Fingerprint(leaf.PublicKey) != e.Redemption.Unpeered {
		return false, nil
	}
	for _, k := range claim {
		if k != nil && keys.Fingerprint(k) == e.Redemption.Key {
			return true, nil
		}
	}
	return false, nil
}

// verifiable returns t as the consumer signed it: the condition is the
// provider's to set, and a consumer asks for Active, so a Tenant the
// provider cordoned or drained is verified (and its nonce redeemed) as the
// Active Tenant it was.
func verifiable(t *authv1beta1.Tenant) *authv1beta1.Tenant {
	if lifecycle.Condition(t.Spec.TenantCondition) == authv1beta1.TenantConditionActive {
		return t
	}
	v := t.DeepCopy()
	v.Spec.TenantCondition = authv1beta1.TenantConditionActive
	return v
}
