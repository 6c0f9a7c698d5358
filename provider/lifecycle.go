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

// Forget unpeers consumerID, as Liqo does when a Tenant is deleted (by its
// consumer, liqoctl unauthenticate or kubepact unauthenticate): it deletes
// the consumer's ControlPlane RoleBinding, every slice binding of the
// consumer (in Options.SliceNamespaces, in its tenant namespace
// where earlier versions bound them, and cluster-wide), whatever its
// slices' labels say, and its Tenant, and the next
// valid handshake signed by the same cluster key is admitted at once. What
// that needs is kept:
//
//   - the nonce, as Liqo keeps its liqo-nonce Secret: a Liqo consumer
//     refuses a different one. When the Tenant was accepted and redeemed
//     it, the nonce is marked (nonce.Redemption.Unpeered) with the key of
//     the certificate cached for the consumer, so IssueNonce keeps it for
//     that key after the Tenant is gone; another key still gets
//     nonce.ErrRedeemed.
//   - the cached certificate (csr.CacheKey{ConsumerID}): it is valid until
//     it expires, whatever happens to the Tenant, so it keeps holding the
//     consumer ID (lifecycle.CheckHolder): another key is refused with a
//     *lifecycle.HeldError until it expires; the unpeered key, proven by
//     the nonce's signature, is its holder.
//
// No revocation record is written, and one already in force (a drain, a
// record an administrator wrote) stays: Accept keeps refusing until it
// ends or Readmit. A deletion is a revocation instead (see Revoke) when
// the stored Tenant is Drained, or carries lifecycle.RevokeAnnotation
// "true". A drained Tenant's nonce is kept as an unpeered one is: the
// drain's record refuses the consumer until the administrator readmits it,
// and then a Liqo consumer comes back with the nonce it already signed,
// with no step by hand. The annotation is what a consumer whose key may
// have leaked sets before deleting
// its Tenant. The tenant namespace stays. Forgetting an unknown consumer
// succeeds.
func (p *Provider) Forget(ctx context.Context, consumerID string) error {
	return p.forget(ctx, consumerID, false)
}

// Revoke deletes what the provider holds for consumerID, as Forget does,
// but as a revocation: when a certificate was issued to the consumer, it
// first records until when it may be valid (lifecycle.Revocation, see
// Readmit) and deletes the bindings of its ServiceAccount identity
// (saidentity.IdentityBinding), whose refresh is then refused, and it
// deletes the cached certificate and the nonce, so that
// nothing of the old peering is kept. Accept binds the consumer again only
// once every certificate issued to it expired, or the administrator
// readmits it; a new key then gets a fresh nonce. kubepact unauthenticate
// --revoke calls it.
func (p *Provider) Revoke(ctx context.Context, consumerID string) error {
	return p.forget(ctx, consumerID, true)
}

// forget unpeers consumerID or, with revoke, or when its stored Tenant is
// drained or asks for it, revokes it.
func (p *Provider) forget(ctx context.Context, consumerID string, revoke bool) error {
	if err := clusterid.Validate(consumerID); err != nil {
		return err
	}
	namespace := clusterid.TenantNamespace(consumerID)
	stored, err := p.ports.Tenants.Get(ctx, namespace, consumerID)
	switch {
	case errors.Is(err, tenant.ErrNotFound):
		stored = nil
	case err != nil:
		return stepError(step.ForgetTenant, err)
	}
	reason := forgetReason(stored, revoke)
	if reason != "" {
		if err := p.revoke(ctx, consumerID, reason); err != nil {
			return err
		}
	}
	// Only a suspected key starts over with a new nonce.
	keepNonce := reason != lifecycle.ReasonRevoked
	if keepNonce {
		if err := p.keepNonce(ctx, consumerID, stored); err != nil {
			return stepError(step.ForgetTenant, err)
		}
	}
	if err := p.unbind(ctx, consumerID); err != nil {
		return stepError(step.ForgetTenant, err)
	}
	if reason != "" {
		if err := p.ports.Certificates.Delete(ctx, csr.CacheKey{ConsumerID: consumerID}); err != nil {
			return stepError(step.ForgetTenant, err)
		}
	}
	if !keepNonce {
		if _, err := p.ports.Nonces.Consume(ctx, consumerID); err != nil && !errors.Is(err, nonce.ErrNotFound) {
			return stepError(step.ForgetTenant, err)
		}
	}
	if err := p.ports.Tenants.Delete(ctx, namespace, consumerID); err != nil {
		return stepError(step.ForgetTenant, err)
	}
	p.unprivileged.forget(consumerID)
	p.step(ctx, step.Done{Name: step.ForgetTenant})
	return nil
}

// forgetReason is the revocation reason an unpeering of the consumer
// whose stored Tenant is stored records, "" for none: ReasonRevoked when
// asked (revoke) or when the Tenant carries lifecycle.RevokeAnnotation
// "true", ReasonDrained for a Drained Tenant.
func forgetReason(stored *authv1beta1.Tenant, revoke bool) string {
	switch {
	case revoke:
		return lifecycle.ReasonRevoked
	case stored != nil && lifecycle.Condition(stored.Spec.TenantCondition) == authv1beta1.TenantConditionDrained:
		return lifecycle.ReasonDrained
	case stored != nil && stored.Annotations[lifecycle.RevokeAnnotation] == "true":
		return lifecycle.ReasonRevoked
	}
	return ""
}

// unbind deletes every binding the provider made for consumerID: its
// ControlPlane RoleBinding, and every slice binding, whatever the slices'
// labels (which the consumer's replicator sets) say, cluster-wide too.
func (p *Provider) unbind(ctx context.Context, consumerID string) error {
	namespace := clusterid.TenantNamespace(consumerID)
	if err := p.ports.RBAC.DeleteRoleBinding(ctx, namespace, rbac.BindingName(rbac.ControlPlaneClusterRoleName)); err != nil {
		return err
	}
	if err := p.unbindSlices(ctx, consumerID); err != nil {
		return err
	}
	if p.ports.ClusterRBAC != nil {
		return p.ports.ClusterRBAC.DeleteClusterRoleBinding(ctx, rbac.ResourceSliceClusterRoleBindingName(consumerID))
	}
	return nil
}

// keepNonce marks the nonce of consumerID as kept for the key of its
// stored Tenant, before an unpeering deletes that Tenant: only when the
// Tenant was accepted (it has a status) with the key that redeemed the
// nonce, and every live certificate the provider holds for the consumer is
// that Tenant's (lifecycle.CheckHolder with the Tenant's own keys). The
// mark names the key of the cached certificate (the Tenant's key when
// nothing is cached), so that certificate stays the unpeered key's and no
// other. Anything else leaves the nonce as it is: IssueNonce then replaces
// it once the Tenant is gone.
func (p *Provider) keepNonce(ctx context.Context, consumerID string, stored *authv1beta1.Tenant) error {
	if stored == nil || stored.Status.AuthParams == nil || lifecycle.FlowOf(stored) != lifecycle.FlowHandshake {
		return nil
	}
	pub, err := keys.ParsePublicKey(stored.Spec.PublicKey)
	if err != nil {
		return nil
	}
	e, err := p.ports.Nonces.Get(ctx, consumerID)
	switch {
	case errors.Is(err, nonce.ErrNotFound):
		return nil
	case err != nil:
		return err
	case e.Redemption == nil || e.Redemption.Key != keys.Fingerprint(pub):
		return nil
	}
	// The Tenant's own keys (its CSR's included, through stored) hold
	// every live certificate, or another key holds one.
	claim := []crypto.PublicKey{pub}
	var cached *csr.CacheEntry
	switch c, err := p.ports.Certificates.Get(ctx, csr.CacheKey{ConsumerID: consumerID}); {
	case err == nil:
		cached = &c
	case !errors.Is(err, csr.ErrNotFound):
		return err
	}
	if lifecycle.CheckHolder(consumerID, stored, cached, claim, p.opts.Clock.Now()) != nil {
		return nil
	}
	holder := e.Redemption.Key
	if cached != nil {
		if leaf, err := csr.ParseCertificate(cached.Certificate); err == nil {
			holder = keys.Fingerprint(leaf.PublicKey)
		}
	}
	if e.Redemption.Unpeered == holder {
		return nil
	}
	e.Redemption.Unpeered = holder
	return p.ports.Nonces.Put(ctx, consumerID, e)
}
