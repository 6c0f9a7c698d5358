package saidentity_test

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/saidentity"
)

// TestIdentityBinding: a drain or a revocation deletes the bindings Issue
// made for the consumer's identity, and no binding that also grants to
// anyone else, or is labelled for another consumer, whoever labelled it.
func TestIdentityBinding(t *testing.T) {
	t.Parallel()
	const id = "cl-consumer"
	grants, err := saidentity.BuildGrants(id)
	if err != nil {
		t.Fatal(err)
	}
	sa := grants.RoleBinding.Subjects[0]
	binding := func(labels map[string]string, subjects ...rbacv1.Subject) lifecycle.Binding {
		return lifecycle.Binding{Namespace: clusterid.TenantNamespace(id), Name: saidentity.Name(id), Labels: labels, Subjects: subjects}
	}
	other := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: clusterid.TenantNamespace(id)}
	user := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: id}
	for _, tt := range []struct {
		name string
		b    lifecycle.Binding
		want bool
	}{
		{"the RoleBinding Issue makes", binding(grants.RoleBinding.Labels, grants.RoleBinding.Subjects...), true},
		{"the ClusterRoleBinding Issue makes", lifecycle.Binding{Name: grants.ClusterRoleBinding.Name, Labels: grants.ClusterRoleBinding.Labels, Subjects: grants.ClusterRoleBinding.Subjects}, true},
		{"no subject", binding(grants.RoleBinding.Labels), false},
		{"another subject too", binding(grants.RoleBinding.Labels, sa, other), false},
		{"the consumer's user", binding(grants.RoleBinding.Labels, user), false},
		{"no identity label", binding(map[string]string{clusterid.Label: id}, sa), false},
		{"labelled for another consumer", binding(map[string]string{clusterid.Label: id, saidentity.IdentityLabel: "cl-other"}, sa), false},
		{"another consumer's ServiceAccount", binding(grants.RoleBinding.Labels, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: saidentity.Name("cl-other"), Namespace: clusterid.TenantNamespace("cl-other")}), false},
	} {
		if got := saidentity.IdentityBinding(tt.b, id); got != tt.want {
			t.Errorf("%s: IdentityBinding = %v, want %v", tt.name, got, tt.want)
		}
	}
	if saidentity.IdentityBinding(binding(grants.RoleBinding.Labels, sa), "Not An ID") {
		t.Error("IdentityBinding for an invalid consumer ID")
	}
}
