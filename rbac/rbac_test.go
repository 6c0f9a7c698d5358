package rbac_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/rbac"
)

const consumerID = "cl-consumer"

var allVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

func TestControlPlaneClusterRole(t *testing.T) {
	t.Parallel()
	want := &rbacv1.ClusterRole{
		TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "liqo-remote-controlplane",
			// Liqo's Tenant controller finds the role by this label.
			Labels: map[string]string{"app.kubernetes.io/name": "remote-controlplane"},
		},
		Rules: []rbacv1.PolicyRule{
			{
				APIGroups: []string{"authentication.liqo.io"},
				Resources: []string{"renews", "renews/status", "resourceslices", "resourceslices/status"},
				Verbs:     allVerbs,
			},
			{
				APIGroups: []string{"offloading.liqo.io"},
				Resources: []string{"namespacemaps", "namespacemaps/status"},
				Verbs:     allVerbs,
			},
		},
	}
	got := rbac.ControlPlaneClusterRole()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("ControlPlaneClusterRole() mismatch (-want +got):\n%s", diff)
	}
	require.Equal(t, rbac.ControlPlaneClusterRoleName, got.Name)
}

func TestControlPlaneClusterRoleGrantsNothingElse(t *testing.T) {
	t.Parallel()
	for _, r := range rbac.ControlPlaneClusterRole().Rules {
		require.NotContains(t, r.Verbs, "*")
		require.NotContains(t, r.APIGroups, "*")
		require.NotContains(t, r.APIGroups, "")
		require.NotContains(t, r.Resources, "*")
		require.NotContains(t, r.Verbs, "escalate")
		require.NotContains(t, r.Verbs, "bind")
		require.NotContains(t, r.Verbs, "impersonate")
		require.Empty(t, r.ResourceNames)
		require.Empty(t, r.NonResourceURLs)
	}
}

func TestControlPlaneClusterRoleDoesNotShareSlices(t *testing.T) {
	t.Parallel()
	a := rbac.ControlPlaneClusterRole()
	a.Rules[0].Verbs[0] = "mutated"
	a.Rules[0].Resources[0] = "mutated"
	b := rbac.ControlPlaneClusterRole()
	require.Equal(t, "create", b.Rules[0].Verbs[0])
	require.Equal(t, "create", b.Rules[1].Verbs[0])
	require.Equal(t, "renews", b.Rules[0].Resources[0])
	require.Equal(t, allVerbs, rbac.Verbs())
}

func TestBindingName(t *testing.T) {
	t.Parallel()
	require.Equal(t, "liqo-binding-liqo-remote-controlplane", rbac.BindingName(rbac.ControlPlaneClusterRoleName))
	require.Equal(t, "liqo-binding-my-role", rbac.BindingName("my-role"))
}

func TestControlPlaneRoleBinding(t *testing.T) {
	t.Parallel()
	want := &rbacv1.RoleBinding{
		TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      "liqo-binding-liqo-remote-controlplane",
			Namespace: "liqo-tenant-cl-consumer",
			Labels:    map[string]string{"liqo.io/remote-cluster-id": consumerID, "app.kubernetes.io/managed-by": "liqo"},
		},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: consumerID}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "liqo-remote-controlplane"},
	}
	got := rbac.ControlPlaneRoleBinding("liqo-tenant-cl-consumer", consumerID)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("ControlPlaneRoleBinding() mismatch (-want +got):\n%s", diff)
	}
}

func groupBinding(namespace, role string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      "liqo-binding-" + role,
			Namespace: namespace,
			Labels:    map[string]string{"liqo.io/remote-cluster-id": consumerID, "app.kubernetes.io/managed-by": "liqo"},
		},
		Subjects: []rbacv1.Subject{{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: consumerID}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
	}
}

func TestResourceSliceRoleBindings(t *testing.T) {
	t.Parallel()
	const role = "liqo-remote-resourceslice"
	tests := []struct {
		name       string
		namespaces []string
		want       []*rbacv1.RoleBinding
	}{
		{name: "none", namespaces: nil, want: []*rbacv1.RoleBinding{}},
		{name: "one", namespaces: []string{"liqo-tenant-cl-consumer"}, want: []*rbacv1.RoleBinding{groupBinding("liqo-tenant-cl-consumer", role)}},
		{
			name:       "sorted and deduplicated",
			namespaces: []string{"ns-c", "ns-a", "ns-c", "ns-b", "ns-a"},
			want:       []*rbacv1.RoleBinding{groupBinding("ns-a", role), groupBinding("ns-b", role), groupBinding("ns-c", role)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := append([]string(nil), tt.namespaces...)
			got := rbac.ResourceSliceRoleBindings(consumerID, role, in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("ResourceSliceRoleBindings() mismatch (-want +got):\n%s", diff)
			}
			require.Equal(t, tt.namespaces, in, "the caller's slice is not reordered")
		})
	}
}

func TestBuildersAreDeterministic(t *testing.T) {
	t.Parallel()
	ns := []string{"ns-b", "ns-a", "ns-b"}
	tests := []struct {
		name string
		make func() any
	}{
		{name: "ClusterRole", make: func() any { return rbac.ControlPlaneClusterRole() }},
		{name: "ControlPlane RoleBinding", make: func() any { return rbac.ControlPlaneRoleBinding("liqo-tenant-x", consumerID) }},
		{name: "ResourceSlice RoleBindings", make: func() any { return rbac.ResourceSliceRoleBindings(consumerID, "role", ns) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.True(t, cmp.Equal(tt.make(), tt.make()))
		})
	}
	require.False(t, cmp.Equal(
		rbac.ResourceSliceRoleBindings(consumerID, "role", []string{"ns-a"}),
		rbac.ResourceSliceRoleBindings(consumerID, "role", []string{"ns-b"}),
	), "the comparison can tell different bindings apart")
}
