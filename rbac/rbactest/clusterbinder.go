package rbactest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/rbac"
)

// ClusterBinderHarness tells RunClusterBinder how to use the ClusterBinder
// under test.
type ClusterBinderHarness struct {
	// New returns the ClusterBinder under test, an Applier to make the
	// ClusterRoles the bindings refer to, and a getter reading a
	// ClusterRoleBinding back ((nil, nil) when there is none). Required.
	New func(t *testing.T) (rbac.ClusterBinder, Port, func(ctx context.Context, name string) (*rbacv1.ClusterRoleBinding, error))
	// Parallel lets the suite's tests run in parallel with each other.
	Parallel bool
}

// RunClusterBinder checks the rbac.ClusterBinder contract:
// ApplyClusterRoleBinding creates a binding, does not write when nothing
// changes (its resourceVersion stays), replaces its subjects and labels,
// and replaces a stored binding whose roleRef differs;
// DeleteClusterRoleBinding removes it and succeeds when there is none; a
// cancelled context fails with context.Canceled. Bindings are named
// "kubepact-test-<random>" and refer only to ClusterRoles the suite
// applied first; the suite deletes them.
func RunClusterBinder(t *testing.T, h ClusterBinderHarness) {
	par := func(t *testing.T) {
		if h.Parallel {
			t.Parallel()
		}
	}
	binding := func(role, group string) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: "kubepact-test-" + uniqueSuffix(), Labels: map[string]string{"kubepact.test/a": "1"}},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: group}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		}
	}

	t.Run("ApplyCreatesUpdatesAndDeletes", func(t *testing.T) {
		par(t)
		ctx := context.Background()
		cb, a, get := h.New(t)
		role := applyClusterRole(t, a)
		b := binding(role.Name, "group-a")
		require.NoError(t, cb.ApplyClusterRoleBinding(ctx, b))
		got, err := get(ctx, b.Name)
		require.NoError(t, err)
		require.NotNil(t, got)
		require.Equal(t, b.Subjects, got.Subjects)
		require.Equal(t, b.RoleRef, got.RoleRef)
		require.Equal(t, "1", got.Labels["kubepact.test/a"])

		require.NoError(t, cb.ApplyClusterRoleBinding(ctx, b))
		again, err := get(ctx, b.Name)
		require.NoError(t, err)
		require.Equal(t, got.ResourceVersion, again.ResourceVersion, "no write when nothing changes")

		b.Subjects[0].Name = "group-b"
		b.Labels = map[string]string{"kubepact.test/b": "2"}
		require.NoError(t, cb.ApplyClusterRoleBinding(ctx, b))
		got, err = get(ctx, b.Name)
		require.NoError(t, err)
		require.Equal(t, b.Subjects, got.Subjects)
		require.Equal(t, "2", got.Labels["kubepact.test/b"])
		require.NotContains(t, got.Labels, "kubepact.test/a", "a label it no longer applies goes")

		other := applyClusterRole(t, a)
		b.RoleRef.Name = other.Name
		require.NoError(t, cb.ApplyClusterRoleBinding(ctx, b))
		got, err = get(ctx, b.Name)
		require.NoError(t, err)
		require.Equal(t, other.Name, got.RoleRef.Name, "roleRef replaced")

		require.NoError(t, cb.DeleteClusterRoleBinding(ctx, b.Name))
		got, err = get(ctx, b.Name)
		require.NoError(t, err)
		require.Nil(t, got)
		require.NoError(t, cb.DeleteClusterRoleBinding(ctx, b.Name), "deleting a missing binding succeeds")
	})

	t.Run("CancelledContext", func(t *testing.T) {
		par(t)
		cb, a, _ := h.New(t)
		role := applyClusterRole(t, a)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		require.ErrorIs(t, cb.ApplyClusterRoleBinding(ctx, binding(role.Name, "group-a")), context.Canceled)
		require.ErrorIs(t, cb.DeleteClusterRoleBinding(ctx, "kubepact-test-"+uniqueSuffix()), context.Canceled)
	})
}
