package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/accept"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/tenant"
)

// BindingReader reports whether bindings are stored as a provider applies
// them: same roleRef and subjects, kubepact's labels, and the owner
// references they carry. It only reads, typically from a cache; an error
// is a failed read, a binding missing or different is false.
type BindingReader interface {
	RoleBindingApplied(ctx context.Context, b *rbacv1.RoleBinding) (bool, error)
	ClusterRoleBindingApplied(ctx context.Context, b *rbacv1.ClusterRoleBinding) (bool, error)
}

// ClusterBindingFinder tells whether a ClusterRoleBinding named name is
// stored at all, whatever its roleRef, subjects and labels: it only reads,
// typically from a cache; an error is a failed read. A BindingReader that
// implements it lets Unchanged vouch for a consumer whose commitment
// withholds the cluster-wide slice role (enrol.Policy) once its slice
// ClusterRoleBinding is gone; without it, Unchanged reports such a
// consumer changed, and Accept deletes the binding.
type ClusterBindingFinder interface {
	ClusterRoleBindingStored(ctx context.Context, name string) (bool, error)
}

// GrantReader finds the bindings that grant an identity something, other
// than the ControlPlane RoleBinding a provider applies: typically from an
// index of a cache of every RoleBinding and ClusterRoleBinding (see
// rbac.RoleBindingGrantees, rbac.ClusterRoleBindingGrantees).
//
// Grants returns the kinds and names of the bindings whose subjects name
// user or one of groups (rbac.IdentityKeys), none when there are none. It
// only reads; an error is a failed read.
type GrantReader interface {
	Grants(ctx context.Context, user string, groups []string) ([]string, error)
}

// CachedRecords are the provider's own records of its consumers as a
// cache of them holds them (a controller's informers), which Unchanged
// reads instead of asking the API server: the nonce as Peek has it at
// hand, the others through their Get methods, and the grants that name a
// consumer's identity. All are required.
//
// A record whose absence lets Unchanged vouch for a Tenant (a revocation
// record, a grant) must be found by its name or its subjects, never by a
// label its writer could leave off: a cache that selects such records by
// label would hide them.
type CachedRecords struct {
	Nonces       nonce.Peeker
	Certificates csr.Cache
	Revocations  lifecycle.Revocations
	Bindings     BindingReader
	Grants       GrantReader
	// Commitments are the provider's AuthorizedConsumers as cached:
	// required where the provider reads commitments (Core.Commitments).
	Commitments enrol.Commitments
}

// Unchanged reports whether Accept of the stored Tenant t would ask
// nothing new and write nothing, judged on records as cached, and then
// returns the Identity Accept would return. It makes no request of its
// own: a controller calls it before Accept, so that a restart, or a
// Tenant requeued with nothing changed, costs no review, no CSR and no
// write. When it reports false, Accept decides, on what the API server
// stores.
//
// t is unchanged when all of these hold:
//
//   - t is a handshake's Tenant, neither being deleted nor drained, and no
//     revocation record is in force for its consumer (lifecycle.Admit, on
//     the cached record);
//   - no binding but the ControlPlane RoleBinding Accept applies names the
//     consumer's user or a group of its certificate (recs.Grants): a
//     grant someone made may be a privilege, which only Accept's
//     rbac.CheckUnprivileged judges;
//   - t carries what Accept records (storedTenant, with kubepact's
//     finalizer unless NoFinalizer), and a status Accept wrote: the
//     endpoint's server and CA, the tenant namespace, and a certificate;
//   - the cached nonce was redeemed by t's digest and key, and t verifies
//     against it, under the current Policy and as of its redemption, as
//     Accept verifies it: a spec changed since, or a Policy made stricter,
//     goes through Accept; or t is the committed request of the cached
//     AuthorizedConsumer of its consumer, and verifies by it;
//   - where an AuthorizedConsumer commits the consumer ID, it lists t's
//     key (recs.Commitments, required when the provider reads
//     commitments);
//   - the certificate record (csr.CacheKey{ConsumerID}) holds t's CSR and
//     the certificate of t's status, which is still fresh (csr.Cached): a
//     certificate due for re-signing goes through Accept;
//   - every live certificate held for the consumer is t's
//     (lifecycle.CheckHolder);
//   - both bindings Accept applies are stored as it applies them, the
//     ControlPlane RoleBinding owned by t; where the cached commitment
//     withholds the cluster-wide slice role, no slice ClusterRoleBinding of
//     the consumer is stored instead (recs.Bindings must then be a
//     ClusterBindingFinder to tell), so that a policy changed to withhold
//     it goes through Accept, which deletes the binding.
//
// Why each step of Accept may be skipped then: the privilege check
// (rbac.CheckUnprivileged) judges what the bindings naming the consumer's
// user and groups grant, and none names them but kubepact's own (what
// every authenticated user is granted, rbac.AuthenticatedGroup, is left to
// Accept's next check, at the Tenant's re-signing or change); the peer
// roles guard what is signed and bound, and nothing is; the nonce was
// redeemed by this very Tenant; the certificate record, the nonce, the
// revocation record and the bindings are objects a consumer cannot write
// (its ControlPlane role grants none of them), so a cache of them can
// only be behind the API server, never wrong in a way a peer chose. A
// cache behind makes Unchanged report a change (Accept then reads the API
// server), or report unchanged for a state that was true moments ago:
// Accept would then have written nothing either, and the change that
// follows requeues the Tenant (a controller watches the Tenant, its
// revocation record and the bindings that name its consumer; a binding of
// kubepact's own someone deletes is applied again at the Tenant's next
// reconcile). Unchanged never grants, writes or signs anything.
func (p *Provider) Unchanged(ctx context.Context, t *authv1beta1.Tenant, recs CachedRecords) (*authv1beta1.Identity, bool) {
	id, err := p.unchanged(ctx, t, recs)
	return id, err == nil
}

// errChanged is why unchanged reports a Tenant that Accept must decide.
var errChanged = errors.New("changed")

// unchanged takes Accept's decision on t over recs: the same checks, over
// Facts from the cache (cachedFacts), and then a Plan that must be empty.
func (p *Provider) unchanged(ctx context.Context, t *authv1beta1.Tenant, recs CachedRecords) (*authv1beta1.Identity, error) {
	if !recs.complete() || p.ports.Commitments != nil && recs.Commitments == nil || t == nil || t.DeletionTimestamp != nil || t.UID == "" || lifecycle.FlowOf(t) != lifecycle.FlowHandshake {
		return nil, errChanged
	}
	in, err := p.parse(t)
	if err != nil {
		return nil, err
	}
	if t.Name != in.consumerID || t.Namespace != clusterid.TenantNamespace(in.consumerID) {
		return nil, errChanged
	}
	f := p.cachedFacts(ctx, in, t, recs)
	for _, stage := range []accept.Stage{accept.StageRedeem, accept.StageIssue} {
		if _, err := p.checks.Run(ctx, stage, f); err != nil {
			return nil, err
		}
	}
	if !accept.Decide(f, p.want(f, false)).Empty() {
		return nil, errChanged
	}
	return identity.Build(p.id, *t.Status.AuthParams, &identity.BuildOptions{TenantNamespace: t.Status.TenantNamespace})
}

// complete reports whether every record is there to read.
func (recs CachedRecords) complete() bool {
	return recs.Nonces != nil && recs.Certificates != nil && recs.Revocations != nil && recs.Bindings != nil && recs.Grants != nil
}

// cachedFacts gathers the Facts of the stored Tenant t, parsed as in, from
// recs alone:
//
//   - the admission judges t itself and the cached revocation record;
//   - the signature holds only when the cached nonce was redeemed by t's
//     digest and key, and t verifies against it as of its redemption;
//   - the privilege check passes only when no binding but kubepact's own
//     names the consumer's user or a group of its certificate: a grant
//     someone made may be a privilege, which only Accept's
//     rbac.CheckUnprivileged judges;
//   - the peer roles pass: they guard what is signed and bound, and
//     nothing is;
//   - the bindings are bound when stored as Accept applies them, the
//     ControlPlane RoleBinding owned by t; the slice ClusterRoleBinding,
//     where the commitment withholds it, is unbound when none is stored
//     (ClusterBindingFinder).
//
// A record that cannot be read counts as a change.
func (p *Provider) cachedFacts(ctx context.Context, in incoming, t *authv1beta1.Tenant, recs CachedRecords) *accept.Facts {
	now := p.opts.Clock.Now()
	f := &accept.Facts{ConsumerID: in.consumerID, Tenant: in.tenant, Key: in.key, Stored: t, Now: now}
	_, f.Admission = lifecycle.Admit(ctx, storedOnly{t}, recs.Revocations, in.consumerID, now)
	f.Verification = errChanged
	f.Commitment, f.Commitments = commitment(ctx, recs.Commitments, in.consumerID)
	// The committed request verifies its own Tenant (Provider.enrolled); any
	// other Tenant verifies against the nonce it redeemed.
	if !p.enrolled(f) {
		if e, ok := recs.Nonces.Peek(ctx, in.consumerID); ok && e.Redemption != nil &&
			bytes.Equal(e.Redemption.By, in.digest) && e.Redemption.Key == keys.Fingerprint(in.key) {
			f.Verified, f.Verification = tenant.Verify(in.tenant, e.Nonce, &tenant.VerifyOptions{ProviderID: p.id, Policy: p.opts.Policy, Now: e.Redemption.At})
		}
	}
	if entry, err := recs.Certificates.Get(ctx, csr.CacheKey{ConsumerID: in.consumerID}); err == nil {
		f.Certificate = &entry
	}
	f.Privileges = func() error {
		grants, err := recs.Grants.Grants(ctx, in.consumerID, controlPlaneGroups())
		if err != nil || len(grants) > 0 {
			return errors.Join(errChanged, err)
		}
		return nil
	}
	binding := rbac.ControlPlaneRoleBinding(clusterid.TenantNamespace(in.consumerID), in.consumerID)
	binding.OwnerReferences = []metav1.OwnerReference{tenant.OwnerReference(t)}
	f.Bound, _ = recs.Bindings.RoleBindingApplied(ctx, binding)
	switch bind, unbind := accept.ClusterBinding(p.ports.ClusterRBAC != nil, f.Commitment); {
	case bind:
		f.ClusterBound, _ = recs.Bindings.ClusterRoleBindingApplied(ctx, rbac.ResourceSliceClusterRoleBinding(in.consumerID))
	case unbind:
		if finder, ok := recs.Bindings.(ClusterBindingFinder); ok {
			stored, err := finder.ClusterRoleBindingStored(ctx, rbac.ResourceSliceClusterRoleBindingName(in.consumerID))
			f.ClusterUnbound = err == nil && !stored
		}
	}
	return f
}

// storedOnly is a lifecycle.TenantReader that has only t stored.
type storedOnly struct{ t *authv1beta1.Tenant }

func (s storedOnly) Get(_ context.Context, namespace, name string) (*authv1beta1.Tenant, error) {
	if s.t.Namespace != namespace || s.t.Name != name {
		return nil, fmt.Errorf("Tenant %s/%s: %w", namespace, name, tenant.ErrNotFound)
	}
	return s.t, nil
}
