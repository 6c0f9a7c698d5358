package controllers_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/resourceslice"
)

// kubeconfigClient returns a client of the provider made from the
// kubeconfig Secret namespace/name on the consumer (peerClient).
func kubeconfigClient(ctx context.Context, t *testing.T, namespace, name string) kubernetes.Interface {
	t.Helper()
	_, cs := peerClient(ctx, t, namespace, name)
	return cs
}

// sliceMetrics reports whether cs, a slice identity's client, may read
// its consumer's metrics (the cluster-wide slice role, all a slice
// identity is granted where no namespace is offloaded to it).
func sliceMetrics(ctx context.Context, t *testing.T, cs kubernetes.Interface) bool {
	t.Helper()
	review, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Group: "metrics.liqo.io", Resource: "scrape", Subresource: "metrics", Verb: "get",
		}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return review.Status.Allowed
}

// requireNoTenantNamespaceRights checks that cs may neither read nor write
// a Secret or a ConfigMap in namespace, the tenant namespace, where this
// cluster keeps its own objects for the peer.
func requireNoTenantNamespaceRights(ctx context.Context, t *testing.T, cs kubernetes.Interface, namespace string) {
	t.Helper()
	for _, res := range []string{"secrets", "configmaps"} {
		for _, verb := range []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"} {
			review, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: namespace, Resource: res, Verb: verb,
				}},
			}, metav1.CreateOptions{})
			require.NoError(t, err)
			require.False(t, review.Status.Allowed, "%s %s in %s", verb, res, namespace)
		}
	}
	_, err := cs.CoreV1().Secrets(namespace).List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "listing Secrets in %s: %v", namespace, err)
	_, err = cs.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "listing ConfigMaps in %s: %v", namespace, err)
}

// sliceCondition returns the status of the condition typ of the consumer's
// slice s, "" while it has none.
func sliceCondition(ctx context.Context, t *testing.T, s *authv1beta1.ResourceSlice, typ authv1beta1.ResourceSliceConditionType) authv1beta1.ResourceSliceConditionStatus {
	t.Helper()
	var local authv1beta1.ResourceSlice
	require.NoError(t, consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(s), &local))
	if c := resourceslice.Condition(&local.Status, typ); c != nil {
		return c.Status
	}
	return ""
}

// The tenant lifecycle with real slice identities, every controller
// running on both clusters: a cordoned Tenant keeps its accepted slice and
// denies a new one; once uncordoned, new slices are accepted again; once
// drained, the ControlPlane and slice kubeconfigs are Forbidden for
// everything they could do.
func TestCordonUncordonDrainWithSliceIdentities(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	peers := peerForSlices(ctx, t, nil)
	providerID, consumerID, tn, id := peers.providerID, peers.consumerID, peers.tenant, peers.identity
	tenantNS := clusterid.TenantNamespace(consumerID)
	controlPlane := kubeconfigClient(ctx, t, id.Namespace, id.Status.KubeconfigSecretRef.Name)

	a := newSlice(providerID, "slice-a")
	require.NoError(t, consumerEnv.client.Create(ctx, a))
	sliceA := waitSliceIdentity(ctx, t, a)

	// Cordoned: slice-a is marked and stays accepted; slice-b is denied.
	editCondition(ctx, t, tn, authv1beta1.TenantConditionCordoned)
	eventually(t, "slice-a cordoned", func() bool { return cordoned(ctx, t, tenantNS, "slice-a") })
	b := newSlice(providerID, "slice-b")
	require.NoError(t, consumerEnv.client.Create(ctx, b))
	eventually(t, "slice-b's resources denied", func() bool {
		return sliceCondition(ctx, t, b, authv1beta1.ResourceSliceConditionTypeResources) == authv1beta1.ResourceSliceConditionDenied
	})
	require.Equal(t, authv1beta1.ResourceSliceConditionAccepted, sliceCondition(ctx, t, a, authv1beta1.ResourceSliceConditionTypeResources))
	require.True(t, sliceMetrics(ctx, t, sliceA), "slice-a still works while cordoned")
	requireNoTenantNamespaceRights(ctx, t, sliceA, tenantNS)
	err := controlPlane.CoreV1().RESTClient().Get().AbsPath("/apis/authentication.liqo.io/v1beta1/namespaces", tenantNS, "resourceslices").Do(ctx).Error()
	require.NoError(t, err, "the ControlPlane still works while cordoned")

	// Active again: new slices are accepted.
	editCondition(ctx, t, tn, authv1beta1.TenantConditionActive)
	eventually(t, "slice-a uncordoned", func() bool { return !cordoned(ctx, t, tenantNS, "slice-a") })
	c := newSlice(providerID, "slice-c")
	require.NoError(t, consumerEnv.client.Create(ctx, c))
	sliceC := waitSliceIdentity(ctx, t, c)
	require.True(t, sliceMetrics(ctx, t, sliceC), "slice-c works")

	// Drained: every kubeconfig of the consumer is powerless at once.
	editCondition(ctx, t, tn, authv1beta1.TenantConditionDrained)
	forbidden := func(err error) bool { return apierrors.IsForbidden(err) }
	listSlices := func(cs kubernetes.Interface) error {
		return cs.CoreV1().RESTClient().Get().AbsPath("/apis/authentication.liqo.io/v1beta1/namespaces", tenantNS, "resourceslices").Do(ctx).Error()
	}
	readMetrics := func(cs kubernetes.Interface) func(kubernetes.Interface) error {
		return func(kubernetes.Interface) error {
			if sliceMetrics(ctx, t, cs) {
				return nil
			}
			return apierrors.NewForbidden(schema.GroupResource{Group: "metrics.liqo.io", Resource: "scrape"}, "metrics", nil)
		}
	}
	listConfigMaps := func(cs kubernetes.Interface) error {
		_, err := cs.CoreV1().ConfigMaps(tenantNS).List(ctx, metav1.ListOptions{})
		return err
	}
	for _, k := range []struct {
		name    string
		cs      kubernetes.Interface
		allowed func(kubernetes.Interface) error // what it could do before
	}{{"the ControlPlane", controlPlane, listSlices}, {"slice-a", sliceA, readMetrics(sliceA)}, {"slice-c", sliceC, readMetrics(sliceC)}} {
		eventually(t, k.name+"'s kubeconfig powerless", func() bool { return forbidden(k.allowed(k.cs)) })
		_, err := k.cs.CoreV1().ConfigMaps(tenantNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-drain"}}, metav1.CreateOptions{})
		require.True(t, forbidden(err), "%s creates no ConfigMap: %v", k.name, err)
		require.True(t, forbidden(listConfigMaps(k.cs)), "%s lists no ConfigMap", k.name)
		_, err = k.cs.CoreV1().Secrets(tenantNS).List(ctx, metav1.ListOptions{})
		require.True(t, forbidden(err), "%s lists no Secret: %v", k.name, err)
		_, err = k.cs.CoreV1().Pods(tenantNS).List(ctx, metav1.ListOptions{})
		require.True(t, forbidden(err), "%s lists no Pod: %v", k.name, err)
		require.True(t, forbidden(listSlices(k.cs)), "%s lists no ResourceSlice", k.name)
	}
	eventually(t, "the provider's slices gone", func() bool {
		var l authv1beta1.ResourceSliceList
		require.NoError(t, providerEnv.client.List(ctx, &l, client.InNamespace(tenantNS)))
		return len(l.Items) == 0
	})
}
