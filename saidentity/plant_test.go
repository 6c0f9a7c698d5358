package saidentity_test

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// plantClusterRole creates, as the admin, a ClusterRole name that allows
// reading every Secret, unless it exists.
func plantClusterRole(t *testing.T, name string) {
	t.Helper()
	r := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list"}}},
	}
	if _, err := provider.client.RbacV1().ClusterRoles().Create(t.Context(), r, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// plantRoleBinding binds, as the admin, ClusterRole role to subjects in
// namespace.
func plantRoleBinding(t *testing.T, namespace, name, role string, subjects []rbacv1.Subject) {
	t.Helper()
	b := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Subjects:   subjects,
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
	}
	if _, err := provider.client.RbacV1().RoleBindings(namespace).Create(t.Context(), b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// plantClusterRoleBinding binds, as the admin, ClusterRole role to
// subjects cluster-wide.
func plantClusterRoleBinding(t *testing.T, name, role string, subjects []rbacv1.Subject) {
	t.Helper()
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Subjects:   subjects,
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
	}
	if _, err := provider.client.RbacV1().ClusterRoleBindings().Create(t.Context(), b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
