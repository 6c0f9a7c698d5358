package controllers_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/resourceslice"
	"github.com/kubepact/kubepact/tenant"
)

// A slice accepted on a real provider carries, on both clusters, what a
// Liqo consumer builds its virtual node from: its resources with the
// default quantities, the StorageClasses the provider cluster holds (the
// configured local one as the default) and the configured classes and
// node labels.
func TestResourceSliceStatusOffer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	providerID, _ := ids(t)
	// StorageClasses are cluster-wide: named after the test, removed after it.
	standard, fast := providerID+"-standard", providerID+"-fast"
	for _, name := range []string{standard, fast} {
		sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "kubepact.test/none"}
		_, err := providerEnv.core.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = providerEnv.core.StorageV1().StorageClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	offer := &resourceslice.Offer{
		DefaultResources:  resourceslice.DefaultResources(),
		LocalStorageClass: fast,
		IngressClasses:    []authv1beta1.IngressType{{IngressClassName: "nginx", Default: true}},
		NodeLabels:        map[string]string{"topology.kubernetes.io/zone": "test"},
	}
	peers := peerForSlices(ctx, t, func(t *testing.T, providerID string) func() {
		return startManager(t, providerEnv, func(mgr manager.Manager) error {
			return controllers.SetupProvider(mgr, controllers.ProviderConfig{
				ClusterID:  providerID,
				Endpoint:   provider.Endpoint{Server: providerEnv.cluster.Host(), CA: providerEnv.cluster.CA()},
				Policy:     tenant.Compatible,
				SliceOffer: offer,
			})
		})
	})

	s := newSlice(peers.providerID, "slice-offer") // asks for cpu: 1
	require.NoError(t, consumerEnv.client.Create(ctx, s))
	check := func(where string, st *authv1beta1.ResourceSliceStatus) {
		t.Helper()
		for name, want := range map[corev1.ResourceName]string{
			corev1.ResourceCPU: "1", corev1.ResourceMemory: "8Gi", corev1.ResourcePods: "110", corev1.ResourceEphemeralStorage: "20Gi",
		} {
			got := st.Resources[name]
			require.Zero(t, got.Cmp(resource.MustParse(want)), "%s: %s: got %s, want %s", where, name, got.String(), want)
		}
		require.Len(t, st.Resources, 4, where)
		require.True(t, slices.IsSortedFunc(st.StorageClasses, func(a, b authv1beta1.StorageType) int {
			return strings.Compare(a.StorageClassName, b.StorageClassName)
		}), "%s: sorted by name: %v", where, st.StorageClasses)
		require.Contains(t, st.StorageClasses, authv1beta1.StorageType{StorageClassName: fast, Default: true}, where)
		require.Contains(t, st.StorageClasses, authv1beta1.StorageType{StorageClassName: standard}, where)
		require.Equal(t, offer.IngressClasses, st.IngressClasses, where)
		require.Equal(t, offer.NodeLabels, st.NodeLabels, where)
	}

	var remote authv1beta1.ResourceSlice
	eventually(t, "the provider's copy accepted", func() bool {
		err := providerEnv.client.Get(ctx, client.ObjectKey{Namespace: clusterid.TenantNamespace(peers.consumerID), Name: s.Name}, &remote)
		return err == nil && resourceslice.Accepted(&remote.Status, authv1beta1.ResourceSliceConditionTypeResources)
	})
	check("provider", &remote.Status)

	// The replicator brings the whole status back to the consumer.
	var local authv1beta1.ResourceSlice
	eventually(t, "the consumer's slice with the offer", func() bool {
		err := consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(s), &local)
		return err == nil && len(local.Status.Resources) > 0 && local.Status.AuthParams != nil
	})
	check("consumer", &local.Status)

	// The status as stored (not only as decoded): the CRD keeps every field.
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(authv1beta1.SchemeGroupVersion.WithKind(authv1beta1.ResourceSliceKind))
	require.NoError(t, consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(s), u))
	for _, field := range []string{"resources", "storageClasses", "ingressClasses", "nodeLabels"} {
		require.Contains(t, u.Object["status"], field)
	}
}
