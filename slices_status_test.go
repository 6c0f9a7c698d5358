package kubepact_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/fake"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/resourceslice"
	"github.com/kubepact/kubepact/wire/intercept"
)

// requireQuantities checks got holds exactly want, compared by value.
func requireQuantities(t *testing.T, want map[corev1.ResourceName]string, got corev1.ResourceList) {
	t.Helper()
	require.Len(t, got, len(want), "%v", got)
	for name, q := range want {
		g, ok := got[name]
		require.True(t, ok, "%s missing from %v", name, got)
		require.Zero(t, g.Cmp(resource.MustParse(q)), "%s: got %s, want %s", name, g.String(), q)
	}
}

// TestAcceptSliceFillsStatus: a slice whose resources are accepted gets
// what a Liqo consumer builds its virtual node from, as Liqo's provider
// gives it: its spec's resources with the default quantities, the
// cluster's StorageClasses with the default marked, and the configured
// classes and node labels; a cordoned tenant's accepted slice keeps them.
func TestAcceptSliceFillsStatus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	p.providerCluster.StorageClasses.Put(&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "standard",
		Annotations: map[string]string{resourceslice.DefaultStorageClassAnnotation: "true"}}})
	p.providerCluster.StorageClasses.Put(&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}})
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)

	remote := replicate(t, p, createSlice(t, p, "slice-status")) // asks for cpu: 2
	status, err := p.provider.AcceptSlice(ctx, remote)
	require.NoError(t, err)
	require.True(t, resourceslice.Accepted(status, authv1beta1.ResourceSliceConditionTypeResources))
	requireQuantities(t, map[corev1.ResourceName]string{
		corev1.ResourceCPU: "2", corev1.ResourceMemory: "8Gi", corev1.ResourcePods: "110", corev1.ResourceEphemeralStorage: "20Gi",
	}, status.Resources)
	require.Equal(t, []authv1beta1.StorageType{{StorageClassName: "fast"}, {StorageClassName: "standard", Default: true}}, status.StorageClasses)
	require.Nil(t, status.IngressClasses, "the default offer names no class")
	require.NotNil(t, status.AuthParams)

	// Cordoned: the slice accepted before keeps its offer.
	tn, err := p.providerCluster.Tenants.Get(ctx, clusterid.TenantNamespace(consumerID), consumerID)
	require.NoError(t, err)
	tn.Spec.TenantCondition = authv1beta1.TenantConditionCordoned
	_, err = p.providerCluster.Tenants.Update(ctx, tn)
	require.NoError(t, err)
	remote.Status = *status
	again, err := p.provider.AcceptSlice(ctx, remote)
	require.NoError(t, err)
	require.Equal(t, status.Resources, again.Resources)
	require.Equal(t, status.StorageClasses, again.StorageClasses)

	// Drained: denied, and offered nothing.
	tn.Spec.TenantCondition = authv1beta1.TenantConditionDrained
	_, err = p.providerCluster.Tenants.Update(ctx, tn)
	require.NoError(t, err)
	remote.Status = *again
	denied, err := p.provider.AcceptSlice(ctx, remote)
	require.NoError(t, err)
	require.False(t, resourceslice.Accepted(denied, authv1beta1.ResourceSliceConditionTypeResources))
	require.Nil(t, denied.Resources)
	require.Nil(t, denied.StorageClasses)
}

// TestAcceptSliceOfferAndPolicy: a configured offer, a policy's caps and
// refusals, and a provider without the StorageClasses port.
func TestAcceptSliceOfferAndPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	p.providerCluster.StorageClasses.Put(&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "standard",
		Annotations: map[string]string{resourceslice.DefaultStorageClassAnnotation: "true"}}})
	p.providerCluster.StorageClasses.Put(&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local-path"}})
	policy := &fake.SlicePolicy{}
	policy.SetLimits(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")})
	ports := p.providerCluster.ProviderPorts()
	ports.SlicePolicy = policy
	offer := &resourceslice.Offer{
		DefaultResources:    corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi")},
		LocalStorageClass:   "local-path",
		IngressClasses:      []authv1beta1.IngressType{{IngressClassName: "nginx", Default: true}, {IngressClassName: "traefik"}},
		LoadBalancerClasses: []authv1beta1.LoadBalancerType{{LoadBalancerClassName: "metallb", Default: true}},
		NodeLabels:          map[string]string{"topology.kubernetes.io/zone": "eu-1"},
	}
	var err error
	p.provider, err = provider.New(providerID, p.providerCluster.Endpoint(), ports, &provider.Options{Clock: p.clock, SliceOffer: offer})
	require.NoError(t, err)
	offer.NodeLabels["changed"] = "after NewProvider" // the provider keeps its own copy
	_, err = kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)

	status, err := p.provider.AcceptSlice(ctx, replicate(t, p, createSlice(t, p, "slice-capped")))
	require.NoError(t, err)
	require.True(t, resourceslice.Accepted(status, authv1beta1.ResourceSliceConditionTypeResources))
	requireQuantities(t, map[corev1.ResourceName]string{corev1.ResourceCPU: "1", corev1.ResourceMemory: "2Gi"}, status.Resources)
	require.Equal(t, []authv1beta1.StorageType{{StorageClassName: "local-path", Default: true}, {StorageClassName: "standard"}}, status.StorageClasses)
	require.Equal(t, []authv1beta1.IngressType{{IngressClassName: "nginx", Default: true}, {IngressClassName: "traefik"}}, status.IngressClasses)
	require.Equal(t, []authv1beta1.LoadBalancerType{{LoadBalancerClassName: "metallb", Default: true}}, status.LoadBalancerClasses)
	require.Equal(t, map[string]string{"topology.kubernetes.io/zone": "eu-1"}, status.NodeLabels)
	require.Equal(t, 1, policy.Calls())

	policy.Refuse(clusterid.TenantNamespace(consumerID), "slice-refused", "over the consumer's quota")
	signed := p.providerCluster.Signer.Signed()
	status, err = p.provider.AcceptSlice(ctx, replicate(t, p, createSlice(t, p, "slice-refused")))
	require.NoError(t, err)
	res := resourceslice.Condition(status, authv1beta1.ResourceSliceConditionTypeResources)
	require.Equal(t, authv1beta1.ResourceSliceConditionDenied, res.Status)
	require.Equal(t, resourceslice.ReasonResourcesDenied, res.Reason)
	require.Contains(t, res.Message, "over the consumer's quota")
	require.True(t, resourceslice.Accepted(status, authv1beta1.ResourceSliceConditionTypeAuthentication))
	require.Nil(t, status.Resources)
	require.Nil(t, status.AuthParams, "a refused slice gets no credentials")
	require.Equal(t, signed, p.providerCluster.Signer.Signed())

	// A failing policy or StorageClass list decides nothing.
	faults := &intercept.Faults{}
	faults.Set(func(_ context.Context, c intercept.Call) error {
		if c.Op == "StorageClasses.List" {
			return context.DeadlineExceeded
		}
		return nil
	})
	p.provider, err = provider.New(providerID, p.providerCluster.Endpoint(), intercept.Provider(ports, faults),
		&provider.Options{Clock: p.clock, SliceOffer: offer})
	require.NoError(t, err)
	status, err = p.provider.AcceptSlice(ctx, replicate(t, p, createSlice(t, p, "slice-io")))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Nil(t, status)

	// Without the StorageClasses port: no storage class is offered.
	ports.StorageClasses = nil
	p.provider, err = provider.New(providerID, p.providerCluster.Endpoint(), ports, &provider.Options{Clock: p.clock})
	require.NoError(t, err)
	status, err = p.provider.AcceptSlice(ctx, replicate(t, p, createSlice(t, p, "slice-nostorage")))
	require.NoError(t, err)
	require.True(t, resourceslice.Accepted(status, authv1beta1.ResourceSliceConditionTypeResources))
	require.Nil(t, status.StorageClasses)
	requireQuantities(t, map[corev1.ResourceName]string{
		corev1.ResourceCPU: "1", corev1.ResourceMemory: "2Gi", corev1.ResourcePods: "110", corev1.ResourceEphemeralStorage: "20Gi",
	}, status.Resources)
}
