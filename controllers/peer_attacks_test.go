package controllers_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/resourceslice"
	"github.com/kubepact/kubepact/tenant"
)

// The tests of this file are attacks of a peer that holds what a provider
// granted it: they run as the peer's real credentials, the kubeconfig
// Secrets its consumer controller wrote (peerClient).

// typedPeer is peerClient's typed client.
func typedPeer(ctx context.Context, t *testing.T, namespace, name string) client.Client {
	t.Helper()
	c, _ := peerClient(ctx, t, namespace, name)
	return c
}

// A slice identity reaches nothing of the provider's tenant namespace for
// its consumer, where, in a two-way peering, the provider keeps its own
// consumer objects for that peer: the kubeconfig Secret of its ControlPlane
// identity (whose key is its cluster key unless it is strict), its signed
// nonce; and its provider records: the nonce, the certificate caches, the
// revocation record. Each is planted as the provider's own controllers
// write it and tried as the slice identity's real kubeconfig.
func TestSliceIdentityReachesNoTenantNamespaceObject(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	peers := peerForSlices(ctx, t, nil)
	providerID, consumerID := peers.providerID, peers.consumerID
	tenantNS := clusterid.TenantNamespace(consumerID)

	s := newSlice(providerID, "slice-thief")
	require.NoError(t, consumerEnv.client.Create(ctx, s))
	thief := waitSliceIdentity(ctx, t, s)

	// What the provider keeps there as the consumer of its peer, and what
	// a drain leaves there.
	own := map[string]*corev1.Secret{
		kubeconfig.SecretName(identity.ControlPlaneName(consumerID)): nil,
		nonce.SignedSecretName: nil,
	}
	for name := range own {
		planted := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tenantNS}, Data: map[string][]byte{"planted": []byte("ours")}}
		_, err := providerEnv.core.CoreV1().Secrets(tenantNS).Create(ctx, planted, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	revocation := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: kube.RevocationName, Namespace: tenantNS}}
	_, err := providerEnv.core.CoreV1().ConfigMaps(tenantNS).Create(ctx, revocation, metav1.CreateOptions{})
	require.NoError(t, err)

	names := []string{nonce.SecretName, csr.CacheKey{ConsumerID: consumerID}.SecretName(), csr.CacheKey{ConsumerID: consumerID, Slice: s.Name}.SecretName()}
	for name := range own {
		names = append(names, name)
	}
	for _, name := range names {
		_, err := thief.CoreV1().Secrets(tenantNS).Get(ctx, name, metav1.GetOptions{})
		require.True(t, apierrors.IsForbidden(err), "reading Secret %s: %v", name, err)
		err = thief.CoreV1().Secrets(tenantNS).Delete(ctx, name, metav1.DeleteOptions{})
		require.True(t, apierrors.IsForbidden(err), "deleting Secret %s: %v", name, err)
	}
	_, err = thief.CoreV1().Secrets(tenantNS).Update(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: nonce.SignedSecretName, Namespace: tenantNS},
		Data: map[string][]byte{nonce.SecretKey: []byte("chosen by the peer")}}, metav1.UpdateOptions{})
	require.True(t, apierrors.IsForbidden(err), "writing the signed nonce (a signing oracle): %v", err)
	err = thief.CoreV1().ConfigMaps(tenantNS).Delete(ctx, kube.RevocationName, metav1.DeleteOptions{})
	require.True(t, apierrors.IsForbidden(err), "deleting the revocation record: %v", err)
	requireNoTenantNamespaceRights(ctx, t, thief, tenantNS)
	require.True(t, sliceMetrics(ctx, t, thief), "what a slice identity is granted: its metrics")
	_, err = providerEnv.core.RbacV1().RoleBindings(tenantNS).Get(ctx, rbac.BindingName(rbac.VirtualKubeletClusterRoleName), metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "no slice binding in the tenant namespace: %v", err)
}

// An upgrade closes the hole, not only new peerings: when it starts, the
// provider deletes the slice RoleBinding that kubepact v0.1.0 bound in a
// tenant namespace, and only that one: a binding of the same name with
// other subjects, or outside a tenant namespace, is not its own and stays.
func TestEarlierTenantNamespaceSliceGrantsDeleted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	providerID, consumerID := ids(t)
	otherID := "cl-other-" + consumerID[len(consumerID)-10:]
	tenantNS, otherTenantNS := clusterid.TenantNamespace(consumerID), clusterid.TenantNamespace(otherID)
	ensureNamespace(ctx, t, providerEnv, consumerID)
	ensureNamespace(ctx, t, providerEnv, otherID)
	offloadNS := "offloaded-" + consumerID
	_, err := providerEnv.core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: offloadNS}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = providerEnv.core.CoreV1().Namespaces().Delete(context.Background(), offloadNS, metav1.DeleteOptions{})
	})
	name := rbac.BindingName(rbac.VirtualKubeletClusterRoleName)
	// What v0.1.0 made: rbac.ResourceSliceRoleBindings in the tenant namespace.
	legacy := rbac.ResourceSliceRoleBindings(consumerID, rbac.VirtualKubeletClusterRoleName, []string{tenantNS})[0]
	// The same, in a namespace an operator offloaded to the consumer.
	offloaded := rbac.ResourceSliceRoleBindings(consumerID, rbac.VirtualKubeletClusterRoleName, []string{offloadNS})[0]
	// A binding of that name someone else made, for more subjects.
	foreign := rbac.ResourceSliceRoleBindings(otherID, rbac.VirtualKubeletClusterRoleName, []string{otherTenantNS})[0]
	foreign.Subjects = append(foreign.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"})
	for _, b := range []*rbacv1.RoleBinding{legacy, offloaded, foreign} {
		_, err = providerEnv.core.RbacV1().RoleBindings(b.Namespace).Create(ctx, b, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	startProvider(t, providerID, tenant.Compatible, nil)
	eventually(t, "the tenant-namespace slice binding deleted", func() bool {
		_, err := providerEnv.core.RbacV1().RoleBindings(tenantNS).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	// The sweep judges every binding of one list in turn: a wrong deletion
	// would follow within moments.
	time.Sleep(time.Second)
	_, err = providerEnv.core.RbacV1().RoleBindings(offloadNS).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err, "outside tenant namespaces: not the grant of an earlier version")
	_, err = providerEnv.core.RbacV1().RoleBindings(otherTenantNS).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err, "another's binding stays")
	require.NoError(t, providerEnv.core.RbacV1().RoleBindings(otherTenantNS).Delete(ctx, name, metav1.DeleteOptions{}))
}

// A revoked peer keeps no binding, whatever the labels it controls say:
// it strips liqo.io/replicated from its slice on the provider (as its
// replicator may) so that the slice reconciler no longer sees it, then is
// revoked; every binding of its group goes (a tenant-namespace slice
// binding an earlier version left included), its slice identity is
// powerless, and the revocation record, which no identity of the peer may
// delete, stays.
func TestRevokedPeerKeepsNoSliceBinding(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	providerID, consumerID := ids(t)
	keyNS := "liqo-" + consumerID
	tenantNS := clusterid.TenantNamespace(consumerID)
	startProvider(t, providerID, tenant.Compatible, nil)
	stopConsumer := startManager(t, consumerEnv, func(mgr manager.Manager) error {
		return controllers.SetupConsumer(mgr, controllers.ConsumerConfig{
			ClusterID: consumerID, KeyNamespace: keyNS, ReplicationResync: 200 * time.Millisecond,
		})
	})
	tn, id := handshake(ctx, t, providerID, consumerID, keyNS, false)
	s := newSlice(providerID, "slice-stripped")
	require.NoError(t, consumerEnv.client.Create(ctx, s))
	sliceCS := waitSliceIdentity(ctx, t, s)
	require.True(t, sliceMetrics(ctx, t, sliceCS))
	// A binding an earlier version left (or an old replica still running
	// during a rolling upgrade made) after the sweep.
	legacy := rbac.ResourceSliceRoleBindings(consumerID, rbac.VirtualKubeletClusterRoleName, []string{tenantNS})[0]
	_, err := providerEnv.core.RbacV1().RoleBindings(tenantNS).Create(ctx, legacy, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) { // v0.1.0 made it itself
		require.NoError(t, err)
	}

	// The peer is hostile from here: its own controllers stop, and it
	// strips the label with its ControlPlane credentials.
	stopConsumer()
	peer := typedPeer(ctx, t, id.Namespace, id.Status.KubeconfigSecretRef.Name)
	var remote authv1beta1.ResourceSlice
	require.NoError(t, peer.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: s.Name}, &remote))
	patch := []byte(`{"metadata":{"labels":{"` + resourceslice.ReplicatedLabel + `":null}}}`)
	require.NoError(t, peer.Patch(ctx, &remote, client.RawPatch("application/merge-patch+json", patch)))

	// The administrator revokes it.
	annotate := []byte(`{"metadata":{"annotations":{"` + lifecycle.RevokeAnnotation + `":"true"}}}`)
	require.NoError(t, providerEnv.client.Patch(ctx, tn.DeepCopy(), client.RawPatch("application/merge-patch+json", annotate), client.FieldOwner("kubectl-annotate")))
	deleteTenant(ctx, t, tn)

	eventually(t, "the slice identity powerless", func() bool { return !sliceMetrics(ctx, t, sliceCS) })
	requireNoTenantNamespaceRights(ctx, t, sliceCS, tenantNS)
	rbs, err := providerEnv.core.RbacV1().RoleBindings(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, b := range rbs.Items {
		for _, sub := range b.Subjects {
			require.NotEqual(t, consumerID, sub.Name, "RoleBinding %s/%s still names the revoked consumer", b.Namespace, b.Name)
		}
	}
	crbs, err := providerEnv.core.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, b := range crbs.Items {
		for _, sub := range b.Subjects {
			require.NotEqual(t, consumerID, sub.Name, "ClusterRoleBinding %s still names the revoked consumer", b.Name)
		}
	}
	_, err = providerEnv.core.CoreV1().ConfigMaps(tenantNS).Get(ctx, kube.RevocationName, metav1.GetOptions{})
	require.NoError(t, err, "the revocation recorded")
	err = sliceCS.CoreV1().ConfigMaps(tenantNS).Delete(ctx, kube.RevocationName, metav1.DeleteOptions{})
	require.True(t, apierrors.IsForbidden(err), "the slice identity deletes no revocation record: %v", err)

	// Its next Tenant is refused.
	again := recreate(ctx, t, tn)
	waitEvent(ctx, t, providerEnv, tenantNS, again.Name, corev1.EventTypeWarning, contract.ReasonConsumerRevoked)
}

// The status of a slice is the provider's, whatever its consumer writes
// there (resourceslices/status is in the ControlPlane role Liqo's chart
// defines): a cordoned consumer that writes Accepted conditions and
// resources into a new slice's status has them computed anew at once,
// gets no certificate, and a slice accepted before the cordon gets back
// the resources the provider granted, not those its consumer wrote.
func TestConsumerWrittenSliceStatusIsComputedAnew(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	peers := peerForSlices(ctx, t, nil)
	providerID, consumerID, tn, id := peers.providerID, peers.consumerID, peers.tenant, peers.identity
	tenantNS := clusterid.TenantNamespace(consumerID)
	before := newSlice(providerID, "slice-before")
	require.NoError(t, consumerEnv.client.Create(ctx, before))
	waitSliceIdentity(ctx, t, before)

	editCondition(ctx, t, tn, authv1beta1.TenantConditionCordoned)
	eventually(t, "slice-before cordoned", func() bool { return cordoned(ctx, t, tenantNS, before.Name) })
	after := newSlice(providerID, "slice-after")
	require.NoError(t, consumerEnv.client.Create(ctx, after))
	remoteDenied := func(name string) bool {
		var remote authv1beta1.ResourceSlice
		if err := providerEnv.client.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: name}, &remote); err != nil {
			return false
		}
		c := resourceslice.Condition(&remote.Status, authv1beta1.ResourceSliceConditionTypeResources)
		return c != nil && c.Status == authv1beta1.ResourceSliceConditionDenied && len(remote.Status.Resources) == 0 &&
			len(remote.Status.Conditions) == 2 && remote.Status.AuthParams == nil
	}
	eventually(t, "slice-after's resources denied", func() bool { return remoteDenied(after.Name) })

	peer := typedPeer(ctx, t, id.Namespace, id.Status.KubeconfigSecretRef.Name)
	forge := func(name string) {
		t.Helper()
		var remote authv1beta1.ResourceSlice
		require.NoError(t, peer.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: name}, &remote))
		now := metav1.Now()
		for i := range remote.Status.Conditions {
			remote.Status.Conditions[i].Status = authv1beta1.ResourceSliceConditionAccepted
			remote.Status.Conditions[i].LastTransitionTime = now
		}
		remote.Status.Resources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000")}
		require.NoError(t, peer.Status().Update(ctx, &remote), "the peer may write the status")
	}

	forge(after.Name)
	eventually(t, "slice-after's forged status computed anew", func() bool { return remoteDenied(after.Name) })
	require.Nil(t, secret(ctx, t, providerEnv, tenantNS, csr.CacheKey{ConsumerID: consumerID, Slice: after.Name}.SecretName()), "nothing signed")

	forge(before.Name)
	eventually(t, "slice-before's resources those the provider granted", func() bool {
		var remote authv1beta1.ResourceSlice
		require.NoError(t, providerEnv.client.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: before.Name}, &remote))
		cpu := remote.Status.Resources[corev1.ResourceCPU]
		return cpu.Equal(resource.MustParse("1")) && len(remote.Status.Conditions) == 2 &&
			resourceslice.Accepted(&remote.Status, authv1beta1.ResourceSliceConditionTypeResources)
	})
}
