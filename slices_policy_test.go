package kubepact_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/kubepact/kubepact"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/rbac"
)

// withheld is a policy that withholds the cluster-wide slice role.
func withheld() *peeringv1alpha1.ConsumerPolicy {
	no := false
	return &peeringv1alpha1.ConsumerPolicy{ResourceSliceClusterWideRole: &no}
}

// clusterBound reports whether the provider stores a ClusterRoleBinding
// named after the consumer's slice identities, in any form.
func clusterBound(p *pair) bool {
	for _, b := range p.providerCluster.RBAC.ClusterRoleBindings.Objects("") {
		if b.Name == rbac.ResourceSliceClusterRoleBindingName(consumerID) {
			return true
		}
	}
	return false
}

// metricsAllowed reports whether the identity of the consumer's slice name
// (user its CN, group the consumer ID) may read metrics.liqo.io
// scrape/metrics: what the cluster-wide slice role grants.
func metricsAllowed(t *testing.T, p *pair, name string) bool {
	t.Helper()
	subject := csr.ResourceSliceSubject(consumerID, name)
	ok, err := p.providerCluster.RBAC.Allowed(context.Background(), subject.CommonName, subject.Organization,
		authorizationv1.ResourceAttributes{Verb: "get", Group: "metrics.liqo.io", Resource: "scrape", Subresource: "metrics"})
	require.NoError(t, err)
	return ok
}

// requireControlPlaneBound checks that the consumer's ControlPlane
// identity keeps its RoleBinding, and what it grants.
func requireControlPlaneBound(t *testing.T, p *pair) {
	t.Helper()
	tenantNS := clusterid.TenantNamespace(consumerID)
	_, ok := p.providerCluster.RBAC.RoleBinding(tenantNS, rbac.BindingName(rbac.ControlPlaneClusterRoleName))
	require.True(t, ok, "the ControlPlane RoleBinding")
	allowed, err := p.providerCluster.RBAC.Allowed(context.Background(), consumerID, []string{csr.ControlPlaneOrganization},
		authorizationv1.ResourceAttributes{Namespace: tenantNS, Verb: "list", Group: "authentication.liqo.io", Version: "v1beta1", Resource: "resourceslices"})
	require.NoError(t, err)
	require.True(t, allowed, "the ControlPlane identity lists its ResourceSlices")
}

// storedTenant returns the consumer's Tenant as the provider stores it.
func storedTenant(t *testing.T, p *pair) *authv1beta1.Tenant {
	t.Helper()
	stored, err := p.providerCluster.Tenants.Get(context.Background(), clusterid.TenantNamespace(consumerID), consumerID)
	require.NoError(t, err)
	return stored
}

// TestCommittedPolicyWithholdsClusterWideRole: an AuthorizedConsumer whose
// policy sets resourceSliceClusterWideRole false peers its consumer with
// no slice ClusterRoleBinding, in the committed enrolment and in a
// handshake of its committed key alike; its slices get their namespaced
// bindings and certificates, and their identities may not read metrics.
// The ControlPlane identity keeps its binding, and a restart finds the
// Tenant unchanged.
func TestCommittedPolicyWithholdsClusterWideRole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("enrolled", func(t *testing.T) {
		t.Parallel()
		p := newPair(t)
		p.commitPolicy(t, withheld())
		p.enrolled(t)
		require.False(t, clusterBound(p), "no slice ClusterRoleBinding")
		requireControlPlaneBound(t, p)

		acceptNew(t, p, p.provider, "slice-a")
		require.False(t, clusterBound(p), "nor once a slice is accepted")
		require.False(t, metricsAllowed(t, p, "slice-a"))
		require.True(t, allowed(t, p, "slice-a", offloadNS, "create", "configmaps"), "the namespaced slice binding stays the provider's")

		_, ok := p.provider.Unchanged(ctx, storedTenant(t, p), cachedRecords(p.providerCluster))
		require.True(t, ok, "nothing to delete: unchanged")
	})
	t.Run("handshake of the committed key", func(t *testing.T) {
		t.Parallel()
		p := newPair(t)
		p.commitPolicy(t, withheld())
		_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
		require.NoError(t, err)
		require.False(t, clusterBound(p), "no slice ClusterRoleBinding")
		requireControlPlaneBound(t, p)
		acceptNew(t, p, p.provider, "slice-a")
		require.False(t, clusterBound(p))
		require.False(t, metricsAllowed(t, p, "slice-a"))
	})
}

// TestCommittedPolicyChangeTakesEffect: a consumer committed without a
// policy is bound cluster-wide; its policy changed to withhold the role,
// the next reconcile of its Tenant (Unchanged reports the change, Accept
// decides) deletes the binding, and the slices' own reconciles do not bind
// it again, while the namespaced slice bindings and the ControlPlane
// identity stay. Changed back, the binding returns.
func TestCommittedPolicyChangeTakesEffect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	p.commitPolicy(t, nil)
	p.enrolled(t)
	slice := acceptNew(t, p, p.provider, "slice-a")
	require.True(t, clusterBound(p), "bound as the provider binds every consumer")
	require.True(t, metricsAllowed(t, p, "slice-a"))

	p.commitPolicy(t, withheld())
	_, ok := p.provider.Unchanged(ctx, storedTenant(t, p), cachedRecords(p.providerCluster))
	require.False(t, ok, "a binding the policy withholds is a change")
	_, err := p.provider.Accept(ctx, storedTenant(t, p))
	require.NoError(t, err)
	require.False(t, clusterBound(p), "deleted")
	require.False(t, metricsAllowed(t, p, "slice-a"))
	requireControlPlaneBound(t, p)
	require.True(t, allowed(t, p, "slice-a", offloadNS, "create", "configmaps"), "the namespaced slice binding stays")
	_, err = p.provider.Enrol(ctx, consumerID)
	require.NoError(t, err, "the grant stands")

	// The slice's reconcile, and a new slice's, bind nothing cluster-wide.
	status, err := p.provider.AcceptSlice(ctx, slice)
	require.NoError(t, err)
	require.NotNil(t, status.AuthParams)
	acceptNew(t, p, p.provider, "slice-b")
	require.False(t, clusterBound(p))
	require.False(t, metricsAllowed(t, p, "slice-b"))
	_, ok = p.provider.Unchanged(ctx, storedTenant(t, p), cachedRecords(p.providerCluster))
	require.True(t, ok)

	// A cache that cannot tell whether the binding is gone vouches for
	// nothing: Accept decides.
	recs := cachedRecords(p.providerCluster)
	recs.Bindings = bindingsOnly{recs.Bindings}
	_, ok = p.provider.Unchanged(ctx, storedTenant(t, p), recs)
	require.False(t, ok)

	p.commitPolicy(t, nil)
	_, ok = p.provider.Unchanged(ctx, storedTenant(t, p), cachedRecords(p.providerCluster))
	require.False(t, ok, "a binding missing is a change")
	_, err = p.provider.Accept(ctx, storedTenant(t, p))
	require.NoError(t, err)
	require.True(t, clusterBound(p), "bound again")
	require.True(t, metricsAllowed(t, p, "slice-a"))
}

// bindingsOnly is a provider.BindingReader and nothing more: no
// provider.ClusterBindingFinder.
type bindingsOnly struct{ provider.BindingReader }

// TestCommittedPolicyCannotGrantClusterWideRole: a policy that sets
// resourceSliceClusterWideRole true binds nothing on a provider that binds
// no consumer cluster-wide.
func TestCommittedPolicyCannotGrantClusterWideRole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	yes := true
	p.commitPolicy(t, &peeringv1alpha1.ConsumerPolicy{ResourceSliceClusterWideRole: &yes})
	ports := p.providerCluster.ProviderPorts()
	ports.ClusterRBAC, ports.Slices, ports.SlicePolicy, ports.StorageClasses = nil, nil, nil, nil
	prov, err := provider.New(providerID, p.providerCluster.Endpoint(), ports, &provider.Options{Clock: p.clock})
	require.NoError(t, err)
	_, err = prov.Enrol(ctx, consumerID)
	require.ErrorIs(t, err, provider.ErrEnrolling)
	_, err = prov.Accept(ctx, storedTenant(t, p))
	require.NoError(t, err)
	requireControlPlaneBound(t, p)
	require.Empty(t, p.providerCluster.RBAC.ClusterRoleBindings.Objects(""))
}
