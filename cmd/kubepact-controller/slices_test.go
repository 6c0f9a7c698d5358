package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/resourceslice"
)

// TestControllerSlices runs kubepact-controller on both clusters with the
// permissions config/ grants its ServiceAccount (RBAC and admission policy),
// and a ResourceSlice made by hand on the consumer becomes, through the
// replicator and the provider's reconciler, a slice Identity and kubeconfig
// Secret. Then the rest of a tenant's life, still as that ServiceAccount:
// the consumer's Renew answered by the provider, cordon, and drain, which
// deletes the bindings (the slice's ClusterRoleBinding too) and records the
// revocation.
func TestControllerSlices(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const providerID, consumerID = "cl-ctl-slices-provider", "cl-ctl-slices-consumer"
	caFile := writeFile(t, providerEnv.cluster.CA())
	start(t, providerEnv, "--cluster-id="+providerID, "--roles=provider",
		"--api-server-url="+providerEnv.cluster.Host(), "--api-server-ca-file="+caFile,
		"--leader-election-namespace=kubepact-system", "--metrics-bind-address=0", "--health-probe-bind-address=0")
	start(t, consumerEnv, "--cluster-id="+consumerID, "--roles=consumer", "--leader-election-namespace=kubepact-system",
		"--metrics-bind-address=0", "--health-probe-bind-address=0")
	handshake(ctx, t, providerID, consumerID)

	ns := clusterid.TenantNamespace(providerID)
	s := &authv1beta1.ResourceSlice{
		TypeMeta:   metav1.TypeMeta{APIVersion: authv1beta1.SchemeGroupVersion.String(), Kind: authv1beta1.ResourceSliceKind},
		ObjectMeta: metav1.ObjectMeta{Name: "slice-ctl", Namespace: ns, Labels: resourceslice.ConsumerLabels(providerID)},
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
	require.NoError(t, err)
	slices := consumerEnv.dynamic.Resource(authv1beta1.SchemeGroupVersion.WithResource(authv1beta1.ResourceSliceResource))
	_, err = slices.Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: m}, metav1.CreateOptions{})
	require.NoError(t, err)
	secretName := kubeconfig.SecretName(identity.ResourceSliceName(s.Name))
	require.Eventually(t, func() bool {
		_, err := consumerEnv.admin.CoreV1().Secrets(ns).Get(ctx, secretName, metav1.GetOptions{})
		return err == nil
	}, time.Minute, 100*time.Millisecond, "the slice's kubeconfig Secret")
	tenantNS := clusterid.TenantNamespace(consumerID)
	_, err = providerEnv.admin.RbacV1().RoleBindings(tenantNS).Get(ctx, "liqo-binding-liqo-virtual-kubelet-remote", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "no slice binding in the tenant namespace: %v", err)
	sliceCRB := rbac.ResourceSliceClusterRoleBindingName(consumerID)
	_, err = providerEnv.admin.RbacV1().ClusterRoleBindings().Get(ctx, sliceCRB, metav1.GetOptions{})
	require.NoError(t, err)

	// Renew: the consumer keeps one for its ControlPlane Identity, the
	// replicator copies it, the provider answers with the Tenant's
	// certificate.
	renews := providerEnv.dynamic.Resource(authv1beta1.SchemeGroupVersion.WithResource(authv1beta1.RenewResource)).Namespace(tenantNS)
	eventually(t, "the provider's answer in the Renew's status", func() bool {
		r, err := renews.Get(ctx, identity.ControlPlaneName(providerID), metav1.GetOptions{})
		if err != nil {
			return false
		}
		crt, _, _ := unstructured.NestedString(r.Object, "status", "authParams", "signedCRT")
		return crt != ""
	})

	tenants := providerEnv.dynamic.Resource(authv1beta1.SchemeGroupVersion.WithResource(authv1beta1.TenantResource)).Namespace(tenantNS)
	setCondition := func(c authv1beta1.TenantCondition) {
		t.Helper()
		patch := []byte(`{"spec":{"tenantCondition":"` + string(c) + `"}}`)
		_, err := tenants.Patch(ctx, consumerID, types.MergePatchType, patch, metav1.PatchOptions{})
		require.NoError(t, err)
	}
	providerSlices := providerEnv.dynamic.Resource(authv1beta1.SchemeGroupVersion.WithResource(authv1beta1.ResourceSliceResource)).Namespace(tenantNS)
	setCondition(authv1beta1.TenantConditionCordoned)
	eventually(t, "the slice cordoned", func() bool {
		got, err := providerSlices.Get(ctx, s.Name, metav1.GetOptions{})
		return err == nil && got.GetAnnotations()[lifecycle.CordonAnnotation] == "true"
	})

	setCondition(authv1beta1.TenantConditionDrained)
	eventually(t, "the drained tenant's bindings gone", func() bool {
		_, errCP := providerEnv.admin.RbacV1().RoleBindings(tenantNS).Get(ctx, rbac.BindingName(rbac.ControlPlaneClusterRoleName), metav1.GetOptions{})
		_, errRB := providerEnv.admin.RbacV1().RoleBindings(tenantNS).Get(ctx, rbac.BindingName(rbac.VirtualKubeletClusterRoleName), metav1.GetOptions{})
		_, errCRB := providerEnv.admin.RbacV1().ClusterRoleBindings().Get(ctx, sliceCRB, metav1.GetOptions{})
		return apierrors.IsNotFound(errCP) && apierrors.IsNotFound(errRB) && apierrors.IsNotFound(errCRB)
	})
	eventually(t, "the revocation recorded", func() bool {
		_, err := providerEnv.admin.CoreV1().ConfigMaps(tenantNS).Get(ctx, kube.RevocationName, metav1.GetOptions{})
		return err == nil
	})
	eventually(t, "the drained tenant's slice gone", func() bool {
		_, err := providerSlices.Get(ctx, s.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}
