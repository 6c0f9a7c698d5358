package kubepact_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/peer"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/resourceslice"
)

// A provider never grants a slice identity rights in a tenant namespace:
// by default it binds only the cluster-wide role, and SliceNamespaces
// naming a tenant namespace (the consumer's own or another's) is refused
// with a *SliceNamespaceError before anything is signed or bound.
func TestSliceNeverGrantedATenantNamespace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("default", func(t *testing.T) {
		t.Parallel()
		p := newPairWith(t, nil)
		_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
		require.NoError(t, err)
		sliceRoundTrip(t, p, "slice-a")
		require.Empty(t, p.providerCluster.RBAC.RoleBindings.Objects(clusterid.TenantNamespace(consumerID))[1:],
			"only the ControlPlane binding in the tenant namespace")
		for _, res := range []string{"secrets", "configmaps"} {
			for _, verb := range rbac.Verbs() {
				require.False(t, allowed(t, p, "slice-a", clusterid.TenantNamespace(consumerID), verb, res), "%s %s", verb, res)
			}
		}
		require.Len(t, p.providerCluster.RBAC.ClusterRoleBindings.Objects(""), 1, "the cluster-wide binding")
	})

	for _, ns := range []string{clusterid.TenantNamespace(consumerID), clusterid.TenantNamespace("cl-someone-else")} {
		t.Run(ns, func(t *testing.T) {
			t.Parallel()
			p := newPairWith(t, func(string) []string { return []string{"offloaded", ns} })
			_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
			require.NoError(t, err)
			signed := p.providerCluster.Signer.Signed()
			bindings := len(p.providerCluster.RBAC.RoleBindings.Objects(""))

			_, err = p.provider.AcceptSlice(ctx, replicate(t, p, createSlice(t, p, "slice-a")))
			var refused *provider.SliceNamespaceError
			require.ErrorAs(t, err, &refused)
			require.Equal(t, ns, refused.Namespace)
			require.ErrorIs(t, err, provider.ErrSliceNamespace)
			require.ErrorIs(t, err, peer.ErrInvalidConfig)
			require.Equal(t, signed, p.providerCluster.Signer.Signed(), "nothing signed")
			require.Len(t, p.providerCluster.RBAC.RoleBindings.Objects(""), bindings, "nothing bound")

			// The unpeering still goes through.
			require.NoError(t, p.provider.Forget(ctx, consumerID))
		})
	}
}

// An unpeering or a revocation deletes every slice binding of the
// consumer, those of slices the provider no longer sees included (a
// consumer's replicator may strip liqo.io/replicated), and the binding
// earlier versions made in the tenant namespace.
func TestForgetDeletesEverySliceBinding(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, revoke := range []bool{false, true} {
		p := newPair(t)
		_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
		require.NoError(t, err)
		sliceRoundTrip(t, p, "slice-a")
		tenantNS := clusterid.TenantNamespace(consumerID)
		// What an earlier version bound by default.
		legacy := rbac.ResourceSliceRoleBindings(consumerID, rbac.VirtualKubeletClusterRoleName, []string{tenantNS})[0]
		require.NoError(t, p.providerCluster.RBAC.ApplyRoleBinding(ctx, legacy))
		// The slice the provider judged is gone from where it looks.
		require.NoError(t, p.providerCluster.Slices.Delete(ctx, tenantNS, "slice-a"))
		require.True(t, allowed(t, p, "slice-a", offloadNS, "get", "secrets"))
		require.True(t, allowed(t, p, "slice-a", tenantNS, "get", "secrets"))

		if revoke {
			require.NoError(t, p.provider.Revoke(ctx, consumerID))
		} else {
			require.NoError(t, p.provider.Forget(ctx, consumerID))
		}
		for _, ns := range []string{offloadNS, tenantNS} {
			_, ok := p.providerCluster.RBAC.RoleBinding(ns, rbac.BindingName(rbac.VirtualKubeletClusterRoleName))
			require.False(t, ok, "revoke=%v: the slice binding in %s", revoke, ns)
			require.False(t, allowed(t, p, "slice-a", ns, "get", "secrets"), "revoke=%v: %s", revoke, ns)
		}
		require.Empty(t, p.providerCluster.RBAC.ClusterRoleBindings.Objects(""))
	}
}

// "Accepted before the cordon" is the provider's own record, the
// certificate it cached for the slice, never the slice's status, which its
// consumer may write: a cordoned consumer that writes Accepted conditions
// and more resources into a new slice's status gets them Denied and no
// credentials; the fields it wrote are not kept; a slice accepted before
// the cordon stays accepted, with the provider's resources.
func TestSliceStatusWrittenByTheConsumerDecidesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	before := replicate(t, p, createSlice(t, p, "slice-before"))
	status, err := p.provider.AcceptSlice(ctx, before)
	require.NoError(t, err)
	before.Status = *status
	before, err = p.providerCluster.Slices.Put(ctx, before)
	require.NoError(t, err)
	require.NoError(t, p.provider.Cordon(ctx, consumerID))

	forge := func(s *authv1beta1.ResourceSlice) {
		now := metav1.NewTime(time.Now().Add(-time.Hour))
		s.Status.Conditions = []authv1beta1.ResourceSliceCondition{
			{Type: authv1beta1.ResourceSliceConditionTypeAuthentication, Status: authv1beta1.ResourceSliceConditionAccepted, LastTransitionTime: now},
			{Type: authv1beta1.ResourceSliceConditionTypeResources, Status: authv1beta1.ResourceSliceConditionAccepted, LastTransitionTime: now},
			{Type: "Quota", Status: authv1beta1.ResourceSliceConditionAccepted, LastTransitionTime: now},
		}
		s.Status.Resources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000"), "nvidia.com/gpu": resource.MustParse("64")}
	}
	after := replicate(t, p, createSlice(t, p, "slice-after"))
	forge(after)
	signed := p.providerCluster.Signer.Signed()
	status, err = p.provider.AcceptSlice(ctx, after)
	require.NoError(t, err)
	require.Equal(t, authv1beta1.ResourceSliceConditionDenied, resourceslice.Condition(status, authv1beta1.ResourceSliceConditionTypeResources).Status)
	require.Nil(t, status.AuthParams, "no credentials")
	require.Empty(t, status.Resources)
	require.Len(t, status.Conditions, 2, "only the provider's conditions")
	require.Equal(t, signed, p.providerCluster.Signer.Signed(), "nothing signed")
	_, err = p.providerCluster.Certificates.Get(ctx, csr.CacheKey{ConsumerID: consumerID, Slice: "slice-after"})
	require.ErrorIs(t, err, csr.ErrNotFound)

	// The slice accepted before the cordon stays accepted, whatever its
	// status says, and gets the provider's resources back.
	forge(before)
	resourceslice.SetCondition(&before.Status, authv1beta1.ResourceSliceConditionTypeResources,
		authv1beta1.ResourceSliceConditionDenied, "Forged", "", time.Now())
	status, err = p.provider.AcceptSlice(ctx, before)
	require.NoError(t, err)
	require.True(t, resourceslice.Accepted(status, authv1beta1.ResourceSliceConditionTypeResources))
	require.Equal(t, resource.MustParse("2"), status.Resources[corev1.ResourceCPU])
	require.NotContains(t, status.Resources, corev1.ResourceName("nvidia.com/gpu"))
	require.NotNil(t, status.AuthParams)
	require.NotEqual(t, "Quota", string(status.Conditions[len(status.Conditions)-1].Type))
}

// A consumer whose identity had a key of its own (Authenticate against a
// kubepact provider) unpeers, then peers again offline with a Tenant the
// provider stores before it accepts it (kubepact apply tenant, then
// generate identity): the nonce's unpeering mark makes its cluster key the
// holder of the certificate still cached, and the new Tenant is accepted.
func TestOfflineReauthenticationAfterOwnKeyUnpeering(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	require.NoError(t, kubepact.Unauthenticate(ctx, p.consumer, p.provider))

	n, err := p.provider.IssueNonce(ctx, consumerID)
	require.NoError(t, err)
	tn, err := p.consumer.Tenant(ctx, providerID, n, nil)
	require.NoError(t, err)
	stored, err := p.providerCluster.Tenants.Update(ctx, tn.DeepCopy())
	require.NoError(t, err)
	_, err = p.provider.Accept(ctx, stored)
	require.NoError(t, err)
}
