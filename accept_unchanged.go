package kubepact

import (
	"bytes"
	"context"
	"crypto"
	"errors"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
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
//     goes through Accept;
//   - the certificate record (csr.CacheKey{ConsumerID}) holds t's CSR and
//     the certificate of t's status, which is still fresh (csr.Cached): a
//     certificate due for re-signing goes through Accept;
//   - every live certificate held for the consumer is t's
//     (lifecycle.CheckHolder);
//   - both bindings Accept applies are stored as it applies them, the
//     ControlPlane RoleBinding owned by t.
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

func (p *Provider) unchanged(ctx context.Context, t *authv1beta1.Tenant, recs CachedRecords) (*authv1beta1.Identity, error) {
	if p.endpoint.Server == "" || len(p.endpoint.CA) == 0 || recs.Nonces == nil || recs.Certificates == nil ||
		recs.Revocations == nil || recs.Bindings == nil || recs.Grants == nil || t == nil || t.DeletionTimestamp != nil || t.UID == "" ||
		lifecycle.FlowOf(t) != lifecycle.FlowHandshake ||
		lifecycle.Condition(t.Spec.TenantCondition) == authv1beta1.TenantConditionDrained {
		return nil, errChanged
	}
	consumerID := t.Spec.ClusterID
	namespace := clusterid.TenantNamespace(consumerID)
	if clusterid.Validate(consumerID) != nil || t.Name != consumerID || t.Namespace != namespace {
		return nil, errChanged
	}
	status := t.Status.AuthParams
	if status == nil || t.Status.TenantNamespace != namespace || status.APIServer != p.endpoint.Server ||
		!bytes.Equal(status.CA, p.endpoint.CA) || len(status.SignedCRT) == 0 {
		return nil, errChanged
	}
	if !recorded(t, storedTenant(t, !p.opts.NoFinalizer)) {
		return nil, errChanged
	}
	pub, err := tenant.Validate(t)
	if err != nil {
		return nil, err
	}
	now := p.opts.Clock.Now()
	// A revocation record in force refuses the consumer: Accept says so.
	switch r, err := recs.Revocations.Get(ctx, consumerID); {
	case errors.Is(err, lifecycle.ErrNotFound):
	case err != nil:
		return nil, err
	default:
		if err := r.Check(now); err != nil {
			return nil, err
		}
	}
	// A binding that names the consumer, other than kubepact's own, is a
	// grant only the privilege check judges: Accept decides.
	if grants, err := recs.Grants.Grants(ctx, consumerID, controlPlaneGroups()); err != nil || len(grants) > 0 {
		return nil, errors.Join(errChanged, err)
	}
	v := verifiable(t)
	e, ok := recs.Nonces.Peek(ctx, consumerID)
	if !ok || e.Redemption == nil || !bytes.Equal(e.Redemption.By, tenant.Digest(v)) || e.Redemption.Key != keys.Fingerprint(pub) {
		return nil, errChanged
	}
	verified, err := tenant.Verify(v, e.Nonce, &tenant.VerifyOptions{ProviderID: p.id, Policy: p.opts.Policy, Now: e.Redemption.At})
	if err != nil {
		return nil, err
	}
	if verified.ProxyURL != status.ProxyURL {
		return nil, errChanged
	}
	entry, err := recs.Certificates.Get(ctx, csr.CacheKey{ConsumerID: consumerID})
	if err != nil {
		return nil, err
	}
	cert := csr.Cached(entry, csr.Request{CSR: verified.CSR, Lifetime: p.opts.CertificateLifetime}, now)
	if cert == nil || !bytes.Equal(cert, status.SignedCRT) {
		return nil, errChanged
	}
	if err := lifecycle.CheckHolder(consumerID, t, &entry, []crypto.PublicKey{pub, verified.CSR.PublicKey()}, now); err != nil {
		return nil, err
	}
	binding := rbac.ControlPlaneRoleBinding(namespace, consumerID)
	binding.OwnerReferences = []metav1.OwnerReference{tenant.OwnerReference(t)}
	if ok, err := recs.Bindings.RoleBindingApplied(ctx, binding); err != nil || !ok {
		return nil, errors.Join(errChanged, err)
	}
	if p.ports.ClusterRBAC != nil {
		if ok, err := recs.Bindings.ClusterRoleBindingApplied(ctx, rbac.ResourceSliceClusterRoleBinding(consumerID)); err != nil || !ok {
			return nil, errors.Join(errChanged, err)
		}
	}
	want := authv1beta1.TenantStatus{
		TenantNamespace: namespace,
		AuthParams:      &authv1beta1.AuthParams{CA: p.endpoint.CA, SignedCRT: cert, APIServer: p.endpoint.Server, ProxyURL: verified.ProxyURL},
	}
	if !equality.Semantic.DeepEqual(t.Status, want) {
		return nil, errChanged
	}
	return identity.Build(p.id, *status, &identity.BuildOptions{TenantNamespace: namespace})
}
