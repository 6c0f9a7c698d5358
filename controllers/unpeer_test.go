package controllers_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/renewal"
	"github.com/kubepact/kubepact/tenant"
)

// recreate applies tn again as liqoctl authenticate does after liqoctl
// unauthenticate: the same consumer key, the nonce the consumer kept in
// liqo-signed-nonce and its signature.
func recreate(ctx context.Context, t *testing.T, tn *authv1beta1.Tenant) *authv1beta1.Tenant {
	t.Helper()
	again := tn.DeepCopy()
	again.ResourceVersion, again.UID, again.Finalizers, again.Status = "", "", nil, authv1beta1.TenantStatus{}
	again.CreationTimestamp, again.DeletionTimestamp, again.ManagedFields = metav1.Time{}, nil, nil
	require.NoError(t, providerEnv.client.Create(ctx, again))
	return again
}

// deleteTenant deletes tn as liqoctl unauthenticate does and waits until
// the provider let it go.
func deleteTenant(ctx context.Context, t *testing.T, tn *authv1beta1.Tenant) {
	t.Helper()
	require.NoError(t, providerEnv.client.Delete(ctx, tn))
	eventually(t, "the Tenant gone", func() bool {
		return apierrors.IsNotFound(providerEnv.client.Get(ctx, client.ObjectKeyFromObject(tn), &authv1beta1.Tenant{}))
	})
}

// A Liqo consumer unpeers (its Tenant deleted) and peers again with the
// nonce it kept: the provider kept the same nonce and admits it at once.
// Then a revocation record refuses the next Tenant, and deleting the record
// (kubepact readmit tenant) requeues it: it gets its status without being
// touched.
func TestUnpeerAndReadmit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	providerID, consumerID := ids(t)
	keyNS := "liqo-" + consumerID
	ns := clusterid.TenantNamespace(consumerID)
	startProvider(t, providerID, tenant.Compatible, nil)
	startConsumer(t, consumerID, keyNS)
	tn, _ := handshake(ctx, t, providerID, consumerID, keyNS, false)
	kept := secret(ctx, t, providerEnv, ns, nonce.SecretName).Data[nonce.SecretKey]

	deleteTenant(ctx, t, tn)
	waitEvent(ctx, t, providerEnv, ns, tn.Name, corev1.EventTypeNormal, contract.ReasonTenantRemoved)
	s := secret(ctx, t, providerEnv, ns, nonce.SecretName)
	require.NotNil(t, s, "the nonce Secret stays, as Liqo keeps it")
	require.Equal(t, kept, s.Data[nonce.SecretKey], "with the same nonce")
	require.NotEmpty(t, s.Annotations[nonce.UnpeeredAnnotation])
	_, err := providerEnv.core.CoreV1().ConfigMaps(ns).Get(ctx, kube.RevocationName, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "an unpeering records no revocation: %v", err)

	again := recreate(ctx, t, tn)
	waitTenantStatus(ctx, t, consumerID)

	// An administrator's revocation record, then the unpeering: the next
	// Tenant is refused until the record goes.
	require.NoError(t, kube.NewRevocations(providerEnv.core).Put(ctx, lifecycle.Revocation{
		ConsumerID: consumerID, Until: time.Now().Add(24 * time.Hour), Reason: lifecycle.ReasonRevoked,
	}))
	deleteTenant(ctx, t, again)
	third := recreate(ctx, t, tn)
	waitEvent(ctx, t, providerEnv, ns, third.Name, corev1.EventTypeWarning, contract.ReasonConsumerRevoked)
	var got authv1beta1.Tenant
	require.NoError(t, providerEnv.client.Get(ctx, client.ObjectKeyFromObject(third), &got))
	require.Nil(t, got.Status.AuthParams, "refused")
	_, err = providerEnv.core.RbacV1().RoleBindings(ns).Get(ctx, rbac.BindingName(rbac.ControlPlaneClusterRoleName), metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "not bound: %v", err)

	require.NoError(t, kube.NewRevocations(providerEnv.core).Delete(ctx, consumerID)) // kubepact readmit tenant
	waitTenantStatus(ctx, t, consumerID)
	_, err = providerEnv.core.RbacV1().RoleBindings(ns).Get(ctx, rbac.BindingName(rbac.ControlPlaneClusterRoleName), metav1.GetOptions{})
	require.NoError(t, err, "bound once readmitted")
}

// A consumer whose key may have leaked asks for the quarantine: it
// annotates its Tenant kubepact.io/revoke: "true" before deleting it.
func TestConsumerAsksForRevocation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	providerID, consumerID := ids(t)
	keyNS := "liqo-" + consumerID
	ns := clusterid.TenantNamespace(consumerID)
	startProvider(t, providerID, tenant.Compatible, nil)
	startConsumer(t, consumerID, keyNS)
	tn, _ := handshake(ctx, t, providerID, consumerID, keyNS, false)

	patch := []byte(`{"metadata":{"annotations":{"` + lifecycle.RevokeAnnotation + `":"true"}}}`)
	require.NoError(t, providerEnv.client.Patch(ctx, tn.DeepCopy(), client.RawPatch("application/merge-patch+json", patch), client.FieldOwner("kubectl-annotate")))
	deleteTenant(ctx, t, tn)
	cm, err := providerEnv.core.CoreV1().ConfigMaps(ns).Get(ctx, kube.RevocationName, metav1.GetOptions{})
	require.NoError(t, err, "the revocation is recorded")
	require.Equal(t, lifecycle.ReasonRevoked, cm.Data[kube.RevocationReasonKey])
	require.Equal(t, "true", cm.Labels[kube.RevocationLabel])
	require.Nil(t, secret(ctx, t, providerEnv, ns, nonce.SecretName), "a revocation drops the nonce")

	again := recreate(ctx, t, tn)
	waitEvent(ctx, t, providerEnv, ns, again.Name, corev1.EventTypeWarning, contract.ReasonConsumerRevoked)
}

// liqoctl unauthenticate deletes a kubepact consumer's Identity, and with
// it its Renew and the kubeconfig its replicator reaches the provider
// with, moments before its Tenant: the provider deletes the Renew the
// replicator copied into the tenant namespace, and only that. A Renew of
// the provider's own there (it is a consumer of its peer too) stays.
func TestUnauthenticateRemovesRenewCopies(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	providerID, consumerID := ids(t)
	keyNS := "liqo-" + consumerID
	ns := clusterid.TenantNamespace(consumerID)
	startProvider(t, providerID, tenant.Compatible, nil)
	startConsumer(t, consumerID, keyNS)
	tn, id := handshake(ctx, t, providerID, consumerID, keyNS, false)
	copied := client.ObjectKey{Namespace: ns, Name: renewal.Name(providerID)}
	eventually(t, "the consumer's Renew copied to the provider", func() bool {
		return providerEnv.client.Get(ctx, copied, &authv1beta1.Renew{}) == nil
	})
	own := &authv1beta1.Renew{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: renewal.Name(consumerID), Labels: map[string]string{"liqo.io/replication": "true"}},
		Spec:       authv1beta1.RenewSpec{ConsumerClusterID: providerID},
	}
	require.NoError(t, providerEnv.client.Create(ctx, own))

	require.NoError(t, consumerEnv.client.Delete(ctx, id))
	deleteTenant(ctx, t, tn)
	eventually(t, "the copy deleted", func() bool {
		return apierrors.IsNotFound(providerEnv.client.Get(ctx, copied, &authv1beta1.Renew{}))
	})
	require.NoError(t, providerEnv.client.Get(ctx, client.ObjectKeyFromObject(own), &authv1beta1.Renew{}), "the provider's own Renew stays")
}
