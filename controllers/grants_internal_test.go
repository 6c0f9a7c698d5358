package controllers

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/rbac"
)

// The index of bindings by grantee, and which Tenants a binding requeues:
// a consumer its user subject names, every Tenant for the group of
// ControlPlane certificates, none for kubepact's own bindings, a user that
// is no cluster ID, or another group.
func TestGranteeIndex(t *testing.T) {
	t.Parallel()
	admin := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}
	all := func() []string { return []string{"cl-a", "cl-b"} }
	for _, tc := range []struct {
		name      string
		o         client.Object
		keys      []string
		consumers []string
	}{
		{"kubepact's ControlPlane RoleBinding", rbac.ControlPlaneRoleBinding(clusterid.TenantNamespace("cl-a"), "cl-a"), nil, nil},
		{"kubepact's slice ClusterRoleBinding", rbac.ResourceSliceClusterRoleBinding("cl-a"), nil, nil},
		{"a ClusterRoleBinding of a consumer's user", &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "granted"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "cl-a"}},
			RoleRef:    admin,
		}, []string{rbac.UserKey("cl-a")}, []string{"cl-a"}},
		{"a RoleBinding of the ControlPlane group", &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "granted"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: csr.ControlPlaneOrganization}},
			RoleRef:    admin,
		}, []string{rbac.GroupKey(csr.ControlPlaneOrganization)}, []string{"cl-a", "cl-b"}},
		{"users that are no cluster ID, another group", &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "system"},
			Subjects: []rbacv1.Subject{
				{Kind: rbacv1.UserKind, Name: "system:kube-scheduler"}, {Kind: rbacv1.GroupKind, Name: "system:masters"},
				{Kind: rbacv1.GroupKind, Name: "cl-a"},
			},
			RoleRef: admin,
		}, []string{rbac.GroupKey("cl-a"), rbac.GroupKey("system:masters"), rbac.UserKey("system:kube-scheduler")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			keys := grantees(tc.o)
			require.Equal(t, tc.keys, keys)
			require.Equal(t, tc.consumers, consumersGranted(keys, all))
		})
	}
	require.Nil(t, grantees(&corev1.ConfigMap{}), "not a binding")
}
