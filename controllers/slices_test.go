package controllers_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/resourceslice"
	"github.com/kubepact/kubepact/tenant"
)

// startSliceConsumer runs the consumer's reconcilers with a short
// replication resync.
func startSliceConsumer(t *testing.T, consumerID, keyNamespace string) {
	t.Helper()
	startManager(t, consumerEnv, func(mgr manager.Manager) error {
		return controllers.SetupConsumer(mgr, controllers.ConsumerConfig{
			ClusterID: consumerID, KeyNamespace: keyNamespace, ReplicationResync: 200 * time.Millisecond,
		})
	})
}

// slicePeers are a provider and a consumer that replicates ResourceSlices,
// after their handshake.
type slicePeers struct {
	providerID, consumerID string
	tenant                 *authv1beta1.Tenant
	identity               *authv1beta1.Identity
	stopProvider           func()
}

// peerForSlices starts a provider with start (nil: Compatible, signing
// through the CSR API) and a consumer that replicates slices every 200 ms,
// and runs the handshake between them.
func peerForSlices(ctx context.Context, t *testing.T, start func(t *testing.T, providerID string) (stop func())) slicePeers {
	t.Helper()
	if start == nil {
		start = func(t *testing.T, providerID string) func() {
			return startProvider(t, providerID, tenant.Compatible, nil)
		}
	}
	p := slicePeers{}
	p.providerID, p.consumerID = ids(t)
	keyNS := "liqo-" + p.consumerID
	p.stopProvider = start(t, p.providerID)
	startSliceConsumer(t, p.consumerID, keyNS)
	p.tenant, p.identity = handshake(ctx, t, p.providerID, p.consumerID, keyNS, false)
	return p
}

// newSlice is what a user applies on the consumer: labels and class, no
// cluster IDs, no CSR.
func newSlice(providerID, name string) *authv1beta1.ResourceSlice {
	return &authv1beta1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: clusterid.TenantNamespace(providerID), Labels: resourceslice.ConsumerLabels(providerID)},
		Spec: authv1beta1.ResourceSliceSpec{
			Class:     authv1beta1.DefaultResourceSliceClass,
			Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		},
	}
}

// waitSliceIdentity waits for the slice's Identity on the consumer and
// returns a client of the provider made from its kubeconfig Secret.
func waitSliceIdentity(ctx context.Context, t *testing.T, s *authv1beta1.ResourceSlice) kubernetes.Interface {
	t.Helper()
	var id authv1beta1.Identity
	eventually(t, "the slice Identity of "+s.Name, func() bool {
		err := consumerEnv.client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: identity.ResourceSliceName(s.Name)}, &id)
		return err == nil && id.Status.KubeconfigSecretRef != nil
	})
	require.Equal(t, authv1beta1.ResourceSliceIdentityType, id.Spec.Type)
	require.Equal(t, s.Name, id.Labels[resourceslice.IdentityLabel])
	require.Equal(t, authv1beta1.ResourceSliceKind, metav1.GetControllerOf(&id).Kind)
	return kubeconfigClient(ctx, t, s.Namespace, kubeconfig.SecretName(id.Name))
}

// ResourceSlices end to end on two real clusters: the handshake, then
// slices created on the consumer, completed, replicated, accepted by the
// provider, and turned into working kubeconfigs with exactly the slice
// RBAC; deleting them cleans up both sides.
func TestResourceSlicesEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	peers := peerForSlices(ctx, t, nil)
	providerID, consumerID := peers.providerID, peers.consumerID

	tenantNS := clusterid.TenantNamespace(consumerID)
	begin := time.Now()
	slices := []*authv1beta1.ResourceSlice{newSlice(providerID, "slice-a"), newSlice(providerID, "slice-b")}
	clients := map[string]kubernetes.Interface{}
	for _, s := range slices {
		require.NoError(t, consumerEnv.client.Create(ctx, s))
	}
	for _, s := range slices {
		clients[s.Name] = waitSliceIdentity(ctx, t, s)
	}
	t.Logf("two slices accepted and their identities ready in %s", time.Since(begin).Round(time.Millisecond))

	for _, s := range slices {
		var local authv1beta1.ResourceSlice
		require.NoError(t, consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(s), &local))
		require.Equal(t, consumerID, *local.Spec.ConsumerClusterID, "completed by the consumer")
		require.True(t, resourceslice.Accepted(&local.Status, authv1beta1.ResourceSliceConditionTypeAuthentication))
		require.True(t, resourceslice.Accepted(&local.Status, authv1beta1.ResourceSliceConditionTypeResources))
		var remote authv1beta1.ResourceSlice
		require.NoError(t, providerEnv.client.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: s.Name}, &remote))
		require.Equal(t, "true", remote.Labels[resourceslice.ReplicatedLabel])
		require.Equal(t, consumerID, remote.Labels[resourceslice.OriginIDLabel])
		require.Equal(t, local.Spec.CSR, remote.Spec.CSR)

		cs := clients[s.Name]
		review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		require.NoError(t, err)
		require.Equal(t, csr.ResourceSliceSubject(consumerID, s.Name).CommonName, review.Status.UserInfo.Username)
		require.Contains(t, review.Status.UserInfo.Groups, consumerID)
		require.True(t, sliceMetrics(ctx, t, cs), "the cluster-wide slice role")
		// No namespace is offloaded to the consumer: no namespaced right,
		// in the tenant namespace least of all.
		requireNoTenantNamespaceRights(ctx, t, cs, tenantNS)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "from-" + s.Name}}
		_, err = cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
		require.True(t, apierrors.IsForbidden(err), "forbidden elsewhere: %v", err)
		_, err = cs.CoreV1().Pods(tenantNS).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, metav1.CreateOptions{})
		require.True(t, apierrors.IsForbidden(err), "no pods of its own: %v", err)
		_, err = cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
		require.True(t, apierrors.IsForbidden(err), "no Secrets cluster-wide: %v", err)
	}
	_, err := providerEnv.core.RbacV1().ClusterRoleBindings().Get(ctx, rbac.ResourceSliceClusterRoleBindingName(consumerID), metav1.GetOptions{})
	require.NoError(t, err)
	waitEvent(ctx, t, providerEnv, tenantNS, "slice-a", corev1.EventTypeNormal, contract.ReasonSliceAccepted)
	waitEvent(ctx, t, consumerEnv, slices[0].Namespace, "slice-a", corev1.EventTypeNormal, contract.ReasonSliceIdentityApplied)

	// Deleting slice-a removes its Identity, Secret, copy and certificate;
	// slice-b keeps the bindings.
	require.NoError(t, consumerEnv.client.Delete(ctx, slices[0]))
	eventually(t, "slice-a gone on both sides", func() bool {
		errL := consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(slices[0]), &authv1beta1.ResourceSlice{})
		errR := providerEnv.client.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: "slice-a"}, &authv1beta1.ResourceSlice{})
		return apierrors.IsNotFound(errL) && apierrors.IsNotFound(errR)
	})
	eventually(t, "slice-a's Identity and Secret gone", func() bool {
		err := consumerEnv.client.Get(ctx, client.ObjectKey{Namespace: slices[0].Namespace, Name: identity.ResourceSliceName("slice-a")}, &authv1beta1.Identity{})
		return apierrors.IsNotFound(err) && secret(ctx, t, consumerEnv, slices[0].Namespace, kubeconfig.SecretName(identity.ResourceSliceName("slice-a"))) == nil
	})
	require.Nil(t, secret(ctx, t, providerEnv, tenantNS, csr.CacheKey{ConsumerID: consumerID, Slice: "slice-a"}.SecretName()))
	require.True(t, sliceMetrics(ctx, t, clients["slice-b"]), "slice-b still works")

	require.NoError(t, consumerEnv.client.Delete(ctx, slices[1]))
	eventually(t, "slice-b gone on the provider", func() bool {
		err := providerEnv.client.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: "slice-b"}, &authv1beta1.ResourceSlice{})
		return apierrors.IsNotFound(err)
	})
	_, err = providerEnv.core.RbacV1().RoleBindings(tenantNS).Get(ctx, rbac.BindingName(rbac.VirtualKubeletClusterRoleName), metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "never a slice binding in the tenant namespace: %v", err)
	// The cluster-wide binding is the accepted Tenant's, as on a Liqo provider.
	_, err = providerEnv.core.RbacV1().ClusterRoleBindings().Get(ctx, rbac.ResourceSliceClusterRoleBindingName(consumerID), metav1.GetOptions{})
	require.NoError(t, err, "the Tenant keeps its cluster-wide binding")
}

// A slice whose CSR breaks the policy is denied on the provider: nothing is
// signed or bound, the denial reaches the consumer, and no Identity is made.
func TestResourceSliceDeniedEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	peers := peerForSlices(ctx, t, nil)
	providerID, consumerID := peers.providerID, peers.consumerID

	s := newSlice(providerID, "slice-bad")
	// A CSR for another slice's CN: the consumer keeps a CSR it is given.
	other := newSlice(providerID, "slice-other")
	require.NoError(t, consumerEnv.client.Create(ctx, other))
	eventually(t, "the other slice's CSR", func() bool {
		require.NoError(t, consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(other), other))
		return len(other.Spec.CSR) > 0
	})
	require.NoError(t, consumerEnv.client.Delete(ctx, other))
	s.Spec.CSR = other.Spec.CSR
	require.NoError(t, consumerEnv.client.Create(ctx, s))
	eventually(t, "the denial on the consumer", func() bool {
		require.NoError(t, consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(s), s))
		c := resourceslice.Condition(&s.Status, authv1beta1.ResourceSliceConditionTypeAuthentication)
		return c != nil && c.Status == authv1beta1.ResourceSliceConditionDenied
	})
	require.Equal(t, resourceslice.ReasonAuthenticationDenied, resourceslice.Condition(&s.Status, authv1beta1.ResourceSliceConditionTypeAuthentication).Reason)
	tenantNS := clusterid.TenantNamespace(consumerID)
	waitEvent(ctx, t, providerEnv, tenantNS, s.Name, corev1.EventTypeWarning, contract.ReasonSliceDenied)
	waitEvent(ctx, t, consumerEnv, s.Namespace, s.Name, corev1.EventTypeWarning, contract.ReasonSliceDenied)
	require.Nil(t, secret(ctx, t, providerEnv, tenantNS, csr.CacheKey{ConsumerID: consumerID, Slice: s.Name}.SecretName()), "nothing signed")
	require.Nil(t, secret(ctx, t, consumerEnv, s.Namespace, kubeconfig.SecretName(identity.ResourceSliceName(s.Name))))
	require.NoError(t, consumerEnv.client.Delete(ctx, s))
}

// Deleting a consumer's Tenant on the provider makes every slice
// certificate of the consumer powerless at once, and denies its slices.
func TestTenantDeletedDeniesSlices(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	peers := peerForSlices(ctx, t, nil)
	providerID, consumerID, tn := peers.providerID, peers.consumerID, peers.tenant

	s := newSlice(providerID, "slice-t")
	require.NoError(t, consumerEnv.client.Create(ctx, s))
	cs := waitSliceIdentity(ctx, t, s)
	tenantNS := clusterid.TenantNamespace(consumerID)
	require.True(t, sliceMetrics(ctx, t, cs))

	require.NoError(t, providerEnv.client.Delete(ctx, tn))
	eventually(t, "the slice credentials powerless", func() bool { return !sliceMetrics(ctx, t, cs) })
	var remote authv1beta1.ResourceSlice
	eventually(t, "the provider's copy denied", func() bool {
		require.NoError(t, providerEnv.client.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: s.Name}, &remote))
		c := resourceslice.Condition(&remote.Status, authv1beta1.ResourceSliceConditionTypeAuthentication)
		return c != nil && c.Status == authv1beta1.ResourceSliceConditionDenied
	})
	require.Nil(t, remote.Status.AuthParams)
	// The ControlPlane binding went with the Tenant: the consumer can no
	// longer reach the provider, and says so.
	waitEvent(ctx, t, consumerEnv, s.Namespace, s.Name, corev1.EventTypeWarning, contract.ReasonReplicationFailed)
}
