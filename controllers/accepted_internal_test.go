package controllers

import (
	"testing"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubepact/kubepact/rbac"
)

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
