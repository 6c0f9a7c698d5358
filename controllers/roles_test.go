package controllers_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/tenant"
)

// On a provider without the ControlPlane role, a Tenant gets a
// PeerRoleMissing Event naming it, and nothing is signed or bound; the
// reconciler retries, and once an administrator installs the roles the
// Tenant is accepted. Not parallel: the role is the whole cluster's.
func TestTenantWaitsForThePeerRole(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	providerID, consumerID := ids(t)
	keyNS := "liqo-" + consumerID
	roles := providerEnv.core.RbacV1().ClusterRoles()
	require.NoError(t, roles.Delete(ctx, rbac.ControlPlaneClusterRoleName, metav1.DeleteOptions{}))
	reinstall := func() { require.NoError(t, rbac.Install(context.Background(), kube.NewRBAC(providerEnv.core))) }
	t.Cleanup(reinstall)
	startProvider(t, providerID, tenant.Compatible, nil)
	startConsumer(t, consumerID, keyNS)

	n := requestNonce(ctx, t, consumerID)
	sig := signNonce(ctx, t, providerID, n)
	tn := buildTenant(ctx, t, providerID, consumerID, keyNS, n, sig, false)
	require.NoError(t, providerEnv.client.Create(ctx, tn))
	note := waitEvent(ctx, t, providerEnv, tn.Namespace, tn.Name, corev1.EventTypeWarning, contract.ReasonPeerRoleMissing)
	require.Contains(t, note, rbac.ControlPlaneClusterRoleName)
	ns := clusterid.TenantNamespace(consumerID)
	_, err := providerEnv.core.RbacV1().RoleBindings(ns).Get(ctx, rbac.BindingName(rbac.ControlPlaneClusterRoleName), metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "nothing bound: %v", err)
	csrs, err := providerEnv.core.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{LabelSelector: clusterid.Label + "=" + consumerID})
	require.NoError(t, err)
	require.Empty(t, csrs.Items, "nothing signed")
	_, err = roles.Get(ctx, rbac.ControlPlaneClusterRoleName, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the controller installs no role: %v", err)

	reinstall()
	waitTenantStatus(ctx, t, consumerID)
}

// A provider started without the URL consumers reach its API server at
// still issues nonces, and refuses a Tenant with an APIServerURLUnknown
// Event instead of signing or binding anything.
func TestTenantRefusedWithoutAPIServerURL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	providerID, consumerID := ids(t)
	keyNS := "liqo-" + consumerID
	startManager(t, providerEnv, func(mgr manager.Manager) error {
		return controllers.SetupProvider(mgr, controllers.ProviderConfig{ClusterID: providerID})
	})
	startConsumer(t, consumerID, keyNS)

	n := requestNonce(ctx, t, consumerID)
	sig := signNonce(ctx, t, providerID, n)
	tn := buildTenant(ctx, t, providerID, consumerID, keyNS, n, sig, false)
	require.NoError(t, providerEnv.client.Create(ctx, tn))
	note := waitEvent(ctx, t, providerEnv, tn.Namespace, tn.Name, corev1.EventTypeWarning, contract.ReasonAPIServerURLUnknown)
	require.Contains(t, note, provider.ErrNoEndpoint.Error())
	_, err := providerEnv.core.RbacV1().RoleBindings(tn.Namespace).Get(ctx, rbac.BindingName(rbac.ControlPlaneClusterRoleName), metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "nothing bound: %v", err)
}
