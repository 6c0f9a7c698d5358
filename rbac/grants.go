package rbac

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubepact/kubepact/clusterid"
)

// UserKey and GroupKey name a user and a group as Grantees returns them.
func UserKey(name string) string  { return "User/" + name }
func GroupKey(name string) string { return "Group/" + name }

// IdentityKeys returns the keys (UserKey, GroupKey) of user and of each of
// groups: what Grantees returns for a binding that names any of them.
func IdentityKeys(user string, groups []string) []string {
	keys := []string{UserKey(user)}
	for _, g := range groups {
		keys = append(keys, GroupKey(g))
	}
	return keys
}

// RoleBindingGrantees returns the keys of the users and groups b grants
// its role to (Grantees), or none when b is the ControlPlane RoleBinding a
// provider applies (IsControlPlaneRoleBinding).
func RoleBindingGrantees(b *rbacv1.RoleBinding) []string {
	if _, ok := IsControlPlaneRoleBinding(b); ok {
		return nil
	}
	return Grantees(b.Subjects)
}

// ClusterRoleBindingGrantees returns the keys of the users and groups b
// grants its role to (Grantees), or none when b is the slice
// ClusterRoleBinding a provider applies with each Tenant
// (ResourceSliceClusterRoleBinding).
func ClusterRoleBindingGrantees(b *rbacv1.ClusterRoleBinding) []string {
	if isResourceSliceClusterRoleBinding(b) {
		return nil
	}
	return Grantees(b.Subjects)
}

// Grantees returns the keys (UserKey, GroupKey) of the users and groups
// that subjects name, sorted and without duplicates. A subject counts as
// the API server's authorizer counts it: a User by its name, a Group by
// its name, whatever their apiGroup or namespace say. ServiceAccount
// subjects are left out: no certificate a provider issues names a
// ServiceAccount's user.
func Grantees(subjects []rbacv1.Subject) []string {
	var keys []string
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			keys = append(keys, UserKey(s.Name))
		case rbacv1.GroupKind:
			keys = append(keys, GroupKey(s.Name))
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// IsControlPlaneRoleBinding reports whether b is a ControlPlane RoleBinding
// as a provider applies it (ControlPlaneRoleBinding), and names its
// consumer: named BindingName(ControlPlaneClusterRoleName), in the tenant
// namespace of that consumer, to ClusterRole ControlPlaneClusterRoleName,
// with user consumerID as its only subject. What it grants is what Accept
// grants, where it grants it, whoever made it; its labels do not count.
func IsControlPlaneRoleBinding(b *rbacv1.RoleBinding) (consumerID string, ok bool) {
	want := ControlPlaneRoleBinding(b.Namespace, "")
	if b.Name != want.Name || b.RoleRef != want.RoleRef || len(b.Subjects) != 1 {
		return "", false
	}
	s := b.Subjects[0]
	if s.Kind != rbacv1.UserKind || s.APIGroup != rbacv1.GroupName || s.Namespace != "" ||
		clusterid.Validate(s.Name) != nil || b.Namespace != clusterid.TenantNamespace(s.Name) {
		return "", false
	}
	return s.Name, true
}

// isResourceSliceClusterRoleBinding reports whether b is the slice
// ClusterRoleBinding a provider applies for a consumer
// (ResourceSliceClusterRoleBinding): its name, roleRef and only subject.
func isResourceSliceClusterRoleBinding(b *rbacv1.ClusterRoleBinding) bool {
	if len(b.Subjects) != 1 || clusterid.Validate(b.Subjects[0].Name) != nil {
		return false
	}
	want := ResourceSliceClusterRoleBinding(b.Subjects[0].Name)
	return b.Name == want.Name && b.RoleRef == want.RoleRef && b.Subjects[0] == want.Subjects[0]
}
