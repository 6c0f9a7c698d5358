package rbac_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubepact/kubepact/fake"
	"github.com/kubepact/kubepact/rbac"
)

// The slice roles as Liqo v1.2's chart ships them
// (deployments/liqo/files and templates/liqo-virtual-kubelet-remote.yaml).
func TestSliceRolesMatchLiqosChart(t *testing.T) {
	t.Parallel()
	objectVerbs := []string{"create", "delete", "get", "list", "patch", "update", "watch"}
	want := []struct {
		name, label string
		rules       []rbacv1.PolicyRule
	}{
		{"liqo-virtual-kubelet-remote", "virtual-kubelet-remote", []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps", "events", "persistentvolumeclaims", "secrets", "services"}, Verbs: objectVerbs},
			{APIGroups: []string{""}, Resources: []string{"pods/attach", "pods/exec"}, Verbs: []string{"create"}},
			{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{""}, Resources: []string{"pods/portforward"}, Verbs: []string{"create", "get"}},
			{APIGroups: []string{"", "metrics.k8s.io"}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: objectVerbs},
			{APIGroups: []string{"offloading.liqo.io"}, Resources: []string{"shadowendpointslices", "shadowpods"}, Verbs: objectVerbs},
		}},
		{"liqo-virtual-kubelet-remote-clusterwide", "virtual-kubelet-remote-clusterwide", []rbacv1.PolicyRule{
			{APIGroups: []string{"metrics.liqo.io"}, Resources: []string{"scrape/metrics"}, Verbs: []string{"get", "list", "watch"}},
		}},
	}
	got := []*rbacv1.ClusterRole{rbac.VirtualKubeletClusterRole(), rbac.VirtualKubeletClusterWideRole()}
	for i, w := range want {
		require.Equal(t, w.name, got[i].Name)
		require.Equal(t, map[string]string{"app.kubernetes.io/name": w.label}, got[i].Labels)
		if diff := cmp.Diff(w.rules, got[i].Rules); diff != "" {
			t.Errorf("%s rules (-chart +got):\n%s", w.name, diff)
		}
	}
}

func TestPeerRoles(t *testing.T) {
	t.Parallel()
	roles := rbac.PeerRoles()
	names := rbac.PeerRoleNames()
	require.Len(t, roles, len(names))
	for i, r := range roles {
		require.Equal(t, names[i], r.Name)
		require.NotEmpty(t, r.Labels[rbac.NameLabel], "%s has Liqo's name label", r.Name)
		for _, rule := range r.Rules {
			for _, v := range []string{"*", "bind", "escalate", "impersonate"} {
				require.NotContains(t, rule.Verbs, v, "%s", r.Name)
			}
			require.NotContains(t, rule.Resources, "*", "%s", r.Name)
			require.NotContains(t, rule.APIGroups, "*", "%s", r.Name)
		}
	}
}

func TestRequireRoles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := &fake.RBAC{}
	for _, name := range rbac.PeerRoleNames() {
		err := rbac.RequireRoles(ctx, a, name)
		var missing *rbac.MissingRoleError
		require.ErrorAs(t, err, &missing)
		require.ErrorIs(t, err, rbac.ErrMissingRole)
		require.Equal(t, name, missing.Name)
	}
	require.NoError(t, rbac.Install(ctx, a))
	require.NoError(t, rbac.RequireRoles(ctx, a, rbac.PeerRoleNames()...))
	require.NoError(t, rbac.Install(ctx, a), "Install again changes nothing")
	require.Len(t, a.ClusterRoles.Objects(""), len(rbac.PeerRoles()))

	a.DeleteClusterRole(rbac.VirtualKubeletClusterWideRoleName)
	var missing *rbac.MissingRoleError
	require.ErrorAs(t, rbac.RequireRoles(ctx, a, rbac.PeerRoleNames()...), &missing)
	require.Equal(t, rbac.VirtualKubeletClusterWideRoleName, missing.Name)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	err := rbac.RequireRoles(cancelled, a, rbac.ControlPlaneClusterRoleName)
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, errors.Is(err, rbac.ErrMissingRole), "an unanswered question is not a missing role")
}
