package rbac_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/rbac"
)

// What a binding grants to, as an index of bindings by grantee reads it:
// every User and Group subject, but none of the bindings a provider
// applies exactly as it applies them.
func TestGrantees(t *testing.T) {
	t.Parallel()
	const id = "cl-granted"
	user := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: id}
	group := rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "liqo.io"}
	admin := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}
	own := rbac.ControlPlaneRoleBinding(clusterid.TenantNamespace(id), id)
	with := func(change func(b *rbacv1.RoleBinding)) *rbacv1.RoleBinding {
		b := own.DeepCopy()
		change(b)
		return b
	}
	for _, tc := range []struct {
		name string
		b    *rbacv1.RoleBinding
		want []string
	}{
		{"the ControlPlane RoleBinding", own, nil},
		{"the ControlPlane RoleBinding without kubepact's labels", with(func(b *rbacv1.RoleBinding) { b.Labels = nil }), nil},
		{"a second subject on it", with(func(b *rbacv1.RoleBinding) { b.Subjects = append(b.Subjects, group) }),
			[]string{rbac.GroupKey("liqo.io"), rbac.UserKey(id)}},
		{"in another namespace", with(func(b *rbacv1.RoleBinding) { b.Namespace = "kube-system" }), []string{rbac.UserKey(id)}},
		{"in another consumer's tenant namespace", with(func(b *rbacv1.RoleBinding) { b.Namespace = clusterid.TenantNamespace("cl-other") }),
			[]string{rbac.UserKey(id)}},
		{"under another name", with(func(b *rbacv1.RoleBinding) { b.Name = "mine" }), []string{rbac.UserKey(id)}},
		{"to another role, labelled as kubepact's", with(func(b *rbacv1.RoleBinding) { b.RoleRef = admin }), []string{rbac.UserKey(id)}},
		{"to a group", with(func(b *rbacv1.RoleBinding) { b.Subjects = []rbacv1.Subject{group} }), []string{rbac.GroupKey("liqo.io")}},
		{"users and groups whatever their apiGroup, sorted, once", &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "x"},
			Subjects: []rbacv1.Subject{
				{Kind: rbacv1.UserKind, Name: "zed"}, group, {Kind: rbacv1.UserKind, Name: "zed"},
				{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: "default"}, user,
			},
			RoleRef: admin,
		}, []string{rbac.GroupKey("liqo.io"), rbac.UserKey(id), rbac.UserKey("zed")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, rbac.RoleBindingGrantees(tc.b))
		})
	}

	slice := rbac.ResourceSliceClusterRoleBinding(id)
	require.Empty(t, rbac.ClusterRoleBindingGrantees(slice), "the slice ClusterRoleBinding a provider applies")
	widened := slice.DeepCopy()
	widened.Subjects = append(widened.Subjects, user)
	require.Equal(t, []string{rbac.GroupKey(id), rbac.UserKey(id)}, rbac.ClusterRoleBindingGrantees(widened))
	toAdmin := slice.DeepCopy()
	toAdmin.RoleRef = admin
	require.Equal(t, []string{rbac.GroupKey(id)}, rbac.ClusterRoleBindingGrantees(toAdmin))
	require.Equal(t, []string{rbac.UserKey(id), rbac.GroupKey("liqo.io")}, rbac.IdentityKeys(id, []string{"liqo.io"}))
}
