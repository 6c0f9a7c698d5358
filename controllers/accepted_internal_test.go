package controllers

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/rbac"
)

// TestTenantOfBinding checks that only a consumer's ControlPlane
// RoleBinding, in its own tenant namespace, requeues its Tenant.
func TestTenantOfBinding(t *testing.T) {
	t.Parallel()
	const id = "cl-bound"
	own := rbac.ControlPlaneRoleBinding(clusterid.TenantNamespace(id), id)
	require.Equal(t, []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: clusterid.TenantNamespace(id), Name: id}}},
		tenantOfBinding(context.Background(), own))

	elsewhere := own.DeepCopy()
	elsewhere.Namespace = clusterid.TenantNamespace("cl-other")
	otherName := own.DeepCopy()
	otherName.Name = rbac.BindingName(rbac.VirtualKubeletClusterRoleName)
	badLabel := own.DeepCopy()
	badLabel.Labels[clusterid.Label] = "Not_Valid"
	for _, b := range []*rbacv1.RoleBinding{elsewhere, otherName, badLabel} {
		require.Empty(t, tenantOfBinding(context.Background(), b), "%s/%s", b.Namespace, b.Name)
	}
}

// TestApplied checks what makes a stored binding differ from the one
// Accept applies: its roleRef, its subjects, a label of kubepact's.
func TestApplied(t *testing.T) {
	t.Parallel()
	want := rbac.ResourceSliceClusterRoleBinding("cl-bound")
	check := func(b *rbacv1.ClusterRoleBinding) bool {
		return applied(b.ObjectMeta, b.RoleRef, b.Subjects, want.ObjectMeta, want.RoleRef, want.Subjects)
	}
	same := want.DeepCopy()
	same.Labels["team"] = "theirs" // labels others add stay, and change nothing
	require.True(t, check(same))

	ref := want.DeepCopy()
	ref.RoleRef.Name = "cluster-admin"
	subjects := want.DeepCopy()
	subjects.Subjects = append(subjects.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory"})
	label := want.DeepCopy()
	delete(label.Labels, rbac.ManagedByLabel)
	for name, b := range map[string]*rbacv1.ClusterRoleBinding{"roleRef": ref, "subjects": subjects, "label": label} {
		require.False(t, check(b), name)
	}
}
