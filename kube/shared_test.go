package kube_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/rbac"
)

// TestApplyClusterRoleKeepsLiqoLabels checks, on a real API server, that
// applying the ControlPlane ClusterRole over one Liqo installed keeps the
// labels Liqo and others put on it, which Liqo's Tenant controller finds it
// by, while the rules become kubepact's.
func TestApplyClusterRoleKeepsLiqoLabels(t *testing.T) {
	ctx := context.Background()
	const foreign = "example.com/installed-by"
	labels := map[string]string{"app.kubernetes.io/name": "remote-controlplane", foreign: "liqo-chart"}

	// Install the role as Liqo would, or label the one earlier tests
	// applied: other tests on this server share it.
	api := providerEnv.client.RbacV1().ClusterRoles()
	_, err := api.Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: rbac.ControlPlaneClusterRoleName, Labels: labels},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		patch := []byte(`{"metadata":{"labels":{"app.kubernetes.io/name":"remote-controlplane","` + foreign + `":"liqo-chart"}}}`)
		_, err = api.Patch(ctx, rbac.ControlPlaneClusterRoleName, types.MergePatchType, patch, metav1.PatchOptions{})
	}
	require.NoError(t, err)

	want := rbac.ControlPlaneClusterRole()
	require.NoError(t, kube.NewRBAC(providerEnv.client).ApplyClusterRole(ctx, want.DeepCopy()))

	got, err := api.Get(ctx, rbac.ControlPlaneClusterRoleName, metav1.GetOptions{})
	require.NoError(t, err)
	for k, v := range labels {
		require.Equal(t, v, got.Labels[k], "label %s", k)
	}
	require.True(t, equality.Semantic.DeepEqual(want.Rules, got.Rules), "rules: got %v, want %v", got.Rules, want.Rules)
}
