package controllers_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/tenant"
)

// editCondition sets the Tenant's condition as an administrator's kubectl
// edit does.
func editCondition(ctx context.Context, t *testing.T, tn *authv1beta1.Tenant, c authv1beta1.TenantCondition) {
	t.Helper()
	patch := []byte(`{"spec":{"tenantCondition":"` + string(c) + `"}}`)
	require.NoError(t, providerEnv.client.Patch(ctx, tn.DeepCopy(), client.RawPatch("application/merge-patch+json", patch), client.FieldOwner("kubectl-edit")))
}

func cordoned(ctx context.Context, t *testing.T, namespace, name string) bool {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(authv1beta1.SchemeGroupVersion.WithKind(authv1beta1.ResourceSliceKind))
	require.NoError(t, providerEnv.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u))
	return u.GetAnnotations()[lifecycle.CordonAnnotation] == "true"
}

// An administrator's edit of tenantCondition is enforced by the Tenant
// reconciler: Cordoned marks the slices and keeps the ControlPlane binding
// (the transcript-signed Tenant is still accepted), Active unmarks them,
// Drained deletes the binding and the slices. A Tenant recreated for the
// drained consumer is refused.
func TestTenantConditionEdits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	providerID, consumerID := ids(t)
	keyNS := "liqo-" + consumerID
	ns := clusterid.TenantNamespace(consumerID)
	startProvider(t, providerID, tenant.Strict, nil)
	startConsumer(t, consumerID, keyNS)
	tn, _ := handshake(ctx, t, providerID, consumerID, keyNS, true)

	s := &unstructured.Unstructured{}
	s.SetGroupVersionKind(authv1beta1.SchemeGroupVersion.WithKind(authv1beta1.ResourceSliceKind))
	s.SetName("slice-a")
	s.SetNamespace(ns)
	s.SetAnnotations(map[string]string{"example.com/note": "kept"})
	require.NoError(t, providerEnv.client.Create(ctx, s))

	editCondition(ctx, t, tn, authv1beta1.TenantConditionCordoned)
	eventually(t, "the slice cordoned", func() bool { return cordoned(ctx, t, ns, "slice-a") })
	waitEvent(ctx, t, providerEnv, ns, tn.Name, corev1.EventTypeNormal, contract.ReasonTenantCordoned)
	_, err := providerEnv.core.RbacV1().RoleBindings(ns).Get(ctx, rbac.BindingName(rbac.ControlPlaneClusterRoleName), metav1.GetOptions{})
	require.NoError(t, err, "a cordoned Tenant keeps its binding")
	require.False(t, hasEvent(ctx, t, providerEnv, ns, tn.Name, contract.ReasonTranscriptRejected), "the cordoned Tenant is still accepted")
	var stored authv1beta1.Tenant
	require.NoError(t, providerEnv.client.Get(ctx, client.ObjectKeyFromObject(tn), &stored))
	require.Equal(t, authv1beta1.TenantConditionCordoned, stored.Spec.TenantCondition, "accepting the Tenant again keeps the condition")
	// A slice created while cordoned is marked too.
	later := &unstructured.Unstructured{}
	later.SetGroupVersionKind(authv1beta1.SchemeGroupVersion.WithKind(authv1beta1.ResourceSliceKind))
	later.SetName("slice-b")
	later.SetNamespace(ns)
	require.NoError(t, providerEnv.client.Create(ctx, later))
	eventually(t, "the new slice cordoned", func() bool { return cordoned(ctx, t, ns, "slice-b") })

	editCondition(ctx, t, tn, authv1beta1.TenantConditionActive)
	eventually(t, "the slice uncordoned", func() bool { return !cordoned(ctx, t, ns, "slice-a") })

	editCondition(ctx, t, tn, authv1beta1.TenantConditionDrained)
	waitEvent(ctx, t, providerEnv, ns, tn.Name, corev1.EventTypeNormal, contract.ReasonTenantDrained)
	_, err = providerEnv.core.RbacV1().RoleBindings(ns).Get(ctx, rbac.BindingName(rbac.ControlPlaneClusterRoleName), metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the binding is gone: %v", err)
	err = providerEnv.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "slice-a"}, s)
	require.True(t, apierrors.IsNotFound(err), "the slice is gone: %v", err)
	_, err = providerEnv.core.CoreV1().ConfigMaps(ns).Get(ctx, kube.RevocationName, metav1.GetOptions{})
	require.NoError(t, err, "the revocation is recorded")

	// Deleted and created again, the Tenant is refused.
	require.NoError(t, providerEnv.client.Delete(ctx, tn))
	eventually(t, "the Tenant gone", func() bool {
		return apierrors.IsNotFound(providerEnv.client.Get(ctx, client.ObjectKeyFromObject(tn), &authv1beta1.Tenant{}))
	})
	again := tn.DeepCopy()
	again.ResourceVersion, again.UID, again.Finalizers, again.Status = "", "", nil, authv1beta1.TenantStatus{}
	again.Spec.TenantCondition = authv1beta1.TenantConditionActive
	require.NoError(t, providerEnv.client.Create(ctx, again))
	waitEvent(ctx, t, providerEnv, ns, again.Name, corev1.EventTypeWarning, contract.ReasonConsumerRevoked)
	_, err = providerEnv.core.RbacV1().RoleBindings(ns).Get(ctx, rbac.BindingName(rbac.ControlPlaneClusterRoleName), metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the recreated Tenant is not bound: %v", err)
}
