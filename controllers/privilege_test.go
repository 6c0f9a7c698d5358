package controllers_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/tenant"
)

// A consumer peered through the controller, whose user an administrator
// then binds to cluster-admin, or whose certificate's group (liqo.io) is
// bound to admin in kube-system: the binding requeues its Tenant, with
// no change to the Tenant, and Accept refuses it at once (not at its
// re-signing, days later): its bindings are deleted, its certificate is
// not re-signed, and a ConsumerPrivileged Event says so. The grant
// deleted, the consumer is bound again with the certificate it holds.
func TestGrantAfterAcceptanceIsJudged(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	providerID, consumerID := ids(t)
	keyNS := "liqo-" + consumerID
	ns := clusterid.TenantNamespace(consumerID)
	startProvider(t, providerID, tenant.Compatible, nil)
	startConsumer(t, consumerID, keyNS)
	tn, _ := handshake(ctx, t, providerID, consumerID, keyNS, false)
	issued := tn.Status.AuthParams.SignedCRT
	rbs, crbs := providerEnv.core.RbacV1().RoleBindings(ns), providerEnv.core.RbacV1().ClusterRoleBindings()
	controlPlane, clusterWide := rbac.BindingName(rbac.ControlPlaneClusterRoleName), rbac.ResourceSliceClusterRoleBindingName(consumerID)
	bound := func() (cp, cw bool) {
		_, err := rbs.Get(ctx, controlPlane, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			require.NoError(t, err)
		}
		cp = err == nil
		_, err = crbs.Get(ctx, clusterWide, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			require.NoError(t, err)
		}
		return cp, err == nil
	}
	cp, cw := bound()
	require.True(t, cp && cw, "bound once accepted")

	for _, grant := range []struct {
		name   string
		create func() error
		remove func() error
	}{
		{"the consumer's user bound to cluster-admin", func() error {
			_, err := crbs.Create(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "admin-grants-" + consumerID},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: consumerID}},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			}, metav1.CreateOptions{})
			return err
		}, func() error { return crbs.Delete(ctx, "admin-grants-"+consumerID, metav1.DeleteOptions{}) }},
		{"the group liqo.io bound to admin in kube-system", func() error {
			_, err := providerEnv.core.RbacV1().RoleBindings("kube-system").Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "admin-grants-" + consumerID},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: csr.ControlPlaneOrganization}},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
			}, metav1.CreateOptions{})
			return err
		}, func() error {
			return providerEnv.core.RbacV1().RoleBindings("kube-system").Delete(ctx, "admin-grants-"+consumerID, metav1.DeleteOptions{})
		}},
	} {
		t.Log(grant.name)
		before := time.Now()
		require.NoError(t, grant.create())
		eventually(t, "the consumer's bindings deleted: "+grant.name, func() bool {
			cp, cw := bound()
			return !cp && !cw
		})
		t.Logf("%s: unbound %v after the grant", grant.name, time.Since(before).Round(time.Millisecond))
		waitEvent(ctx, t, providerEnv, ns, tn.Name, corev1.EventTypeWarning, contract.ReasonConsumerPrivileged)
		stored := waitTenantStatus(ctx, t, consumerID)
		require.Equal(t, issued, stored.Status.AuthParams.SignedCRT, "not re-signed")
		require.Equal(t, tn.Generation, stored.Generation, "judged with no change to the Tenant")

		require.NoError(t, grant.remove())
		eventually(t, "bound again once the grant goes: "+grant.name, func() bool {
			cp, cw := bound()
			return cp && cw
		})
		require.Equal(t, issued, waitTenantStatus(ctx, t, consumerID).Status.AuthParams.SignedCRT, "with the certificate issued")
		require.NoError(t, providerEnv.core.EventsV1().Events(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}))
	}
}

// A revocation record written by hand, without kube.RevocationLabel, while
// the controller is down: the restarted controller's cache finds it by
// name, so the restart does not vouch for the consumer's Tenant, and
// Accept refuses it.
func TestUnlabelledRevocationRecordCountsOnRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	providerID, consumerID := ids(t)
	keyNS := "liqo-" + consumerID
	ns := clusterid.TenantNamespace(consumerID)
	stop := startProvider(t, providerID, tenant.Compatible, nil)
	startConsumer(t, consumerID, keyNS)
	tn, _ := handshake(ctx, t, providerID, consumerID, keyNS, false)
	stop()

	_, err := providerEnv.core.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: kube.RevocationName},
		Data: map[string]string{
			kube.RevocationUntilKey:  time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
			kube.RevocationReasonKey: lifecycle.ReasonRevoked,
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	startProvider(t, providerID, tenant.Compatible, nil)
	waitEvent(ctx, t, providerEnv, ns, tn.Name, corev1.EventTypeWarning, contract.ReasonConsumerRevoked)
}
