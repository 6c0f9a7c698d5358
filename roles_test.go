package kubepact_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/rbac"
)

// A provider whose peer roles are not installed refuses the handshake with
// a *rbac.MissingRoleError naming the role, before anything is signed or
// bound, and never installs a role itself; once an administrator installs
// them, the same consumer is accepted.
func TestAcceptRefusesWhileThePeerRoleIsMissing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	p.providerCluster.RBAC.DeleteClusterRole(rbac.ControlPlaneClusterRoleName)

	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	var missing *rbac.MissingRoleError
	require.ErrorAs(t, err, &missing)
	require.ErrorIs(t, err, rbac.ErrMissingRole)
	require.Equal(t, rbac.ControlPlaneClusterRoleName, missing.Name)
	require.Zero(t, p.providerCluster.Signer.Signed(), "nothing signed")
	require.Zero(t, p.providerCluster.Certificates.Len(), "nothing cached")
	require.Empty(t, p.providerCluster.RBAC.RoleBindings.Objects(""), "nothing bound")
	ok, err := p.providerCluster.RBAC.HasClusterRole(ctx, rbac.ControlPlaneClusterRoleName)
	require.NoError(t, err)
	require.False(t, ok, "the handshake installs no role")

	require.NoError(t, rbac.Install(ctx, p.providerCluster.RBAC))
	_, err = kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
}

// The same for a ResourceSlice: its roles missing, it is neither signed nor
// bound.
func TestAcceptSliceRefusesWhileASliceRoleIsMissing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	p.providerCluster.RBAC.DeleteClusterRole(rbac.VirtualKubeletClusterRoleName)
	signed := p.providerCluster.Signer.Signed()
	bindings := len(p.providerCluster.RBAC.RoleBindings.Objects(""))

	_, err = p.provider.AcceptSlice(ctx, replicate(t, p, createSlice(t, p, "slice-a")))
	var missing *rbac.MissingRoleError
	require.ErrorAs(t, err, &missing)
	require.Equal(t, rbac.VirtualKubeletClusterRoleName, missing.Name)
	require.Equal(t, signed, p.providerCluster.Signer.Signed(), "nothing signed")
	require.Len(t, p.providerCluster.RBAC.RoleBindings.Objects(""), bindings, "nothing bound")
	require.Len(t, p.providerCluster.RBAC.ClusterRoleBindings.Objects(""), 1, "only the Tenant's cluster-wide binding")
}

// As Liqo's provider does, accepting a Tenant binds group consumerID to the
// cluster-wide slice role at once; an unpeering removes that binding.
func TestAcceptBindsTheClusterWideRole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	crbs := p.providerCluster.RBAC.ClusterRoleBindings.Objects("")
	require.Len(t, crbs, 1)
	require.Equal(t, rbac.ResourceSliceClusterRoleBinding(consumerID).Subjects, crbs[0].Subjects)
	require.Equal(t, rbac.VirtualKubeletClusterWideRoleName, crbs[0].RoleRef.Name)

	require.NoError(t, p.provider.Forget(ctx, consumerID))
	require.Empty(t, p.providerCluster.RBAC.ClusterRoleBindings.Objects(""), "unpeered: the binding goes")
}

// Without the cluster-wide slice role, the Tenant is refused before
// anything is signed.
func TestAcceptRefusesWhileTheClusterWideRoleIsMissing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	p.providerCluster.RBAC.DeleteClusterRole(rbac.VirtualKubeletClusterWideRoleName)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	var missing *rbac.MissingRoleError
	require.ErrorAs(t, err, &missing)
	require.Equal(t, rbac.VirtualKubeletClusterWideRoleName, missing.Name)
	require.Zero(t, p.providerCluster.Signer.Signed(), "nothing signed")
}
