package controllers_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/resourceslice"
)

// kubeconfigClient returns a client of the provider made from the
// kubeconfig Secret namespace/name on the consumer.
func kubeconfigClient(ctx context.Context, t *testing.T, namespace, name string) kubernetes.Interface {
	t.Helper()
	s := secret(ctx, t, consumerEnv, namespace, name)
	require.NotNil(t, s)
	cfg, err := kubeconfig.Parse(s.Data[kubeconfig.SecretKey])
	require.NoError(t, err)
	rc, err := cfg.RESTConfig()
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(rc)
	require.NoError(t, err)
	return cs
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
	_, err := sliceA.CoreV1().ConfigMaps(tenantNS).List(ctx, metav1.ListOptions{})
	require.NoError(t, err, "slice-a still works while cordoned")
	err = controlPlane.CoreV1().RESTClient().Get().AbsPath("/apis/authentication.liqo.io/v1beta1/namespaces", tenantNS, "resourceslices").Do(ctx).Error()
	require.NoError(t, err, "the ControlPlane still works while cordoned")

	// Active again: new slices are accepted.
	editCondition(ctx, t, tn, authv1beta1.TenantConditionActive)
	eventually(t, "slice-a uncordoned", func() bool { return !cordoned(ctx, t, tenantNS, "slice-a") })
	c := newSlice(providerID, "slice-c")
	require.NoError(t, consumerEnv.client.Create(ctx, c))
	sliceC := waitSliceIdentity(ctx, t, c)
	_, err = sliceC.CoreV1().ConfigMaps(tenantNS).List(ctx, metav1.ListOptions{})
	require.NoError(t, err, "slice-c works")

	// Drained: every kubeconfig of the consumer is powerless at once.
	editCondition(ctx, t, tn, authv1beta1.TenantConditionDrained)
	forbidden := func(err error) bool { return apierrors.IsForbidden(err) }
	listSlices := func(cs kubernetes.Interface) error {
		return cs.CoreV1().RESTClient().Get().AbsPath("/apis/authentication.liqo.io/v1beta1/namespaces", tenantNS, "resourceslices").Do(ctx).Error()
	}
	listConfigMaps := func(cs kubernetes.Interface) error {
		_, err := cs.CoreV1().ConfigMaps(tenantNS).List(ctx, metav1.ListOptions{})
		return err
	}
	for _, k := range []struct {
		name    string
		cs      kubernetes.Interface
		allowed func(kubernetes.Interface) error // what it could do before
	}{{"the ControlPlane", controlPlane, listSlices}, {"slice-a", sliceA, listConfigMaps}, {"slice-c", sliceC, listConfigMaps}} {
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
