package kubepact_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/wire/intercept"
)

// sliceRun is one slice end to end after the handshake: built, replicated,
// accepted, applied.
func sliceRun(ctx context.Context, t *testing.T, p *faultyPair) error {
	local, err := p.consumer.Slice(ctx, providerID, "slice-a", nil)
	if err != nil {
		return err
	}
	local.UID = "uid-slice-a"
	status, err := p.provider.AcceptSlice(ctx, replicateB(t, p.pair, local))
	if err != nil {
		return err
	}
	local.Status = *status
	_, err = p.consumer.ApplySliceIdentity(ctx, local, nil)
	return err
}

// TestSliceFaultAtEveryCall fails each call of a slice's round trip in
// turn, before it runs and after it took effect: the run fails with that
// error, and run again completes, with one certificate, one binding of
// each kind, one Identity and one kubeconfig Secret.
func TestSliceFaultAtEveryCall(t *testing.T) {
	t.Parallel()
	for _, strict := range []bool{false, true} {
		probe := newFaultyPair(t, strict)
		ctx := context.Background()
		_, err := kubepact.Authenticate(ctx, probe.consumer, probe.provider, nil)
		require.NoError(t, err)
		before := len(probe.faults.Calls())
		require.NoError(t, sliceRun(ctx, t, probe))
		calls := probe.faults.Calls()[before:]

		eachFault(t, strict, calls, func(t *testing.T, strict bool, target intercept.Call, occurrence int, fault error) {
			p := newFaultyPair(t, strict)
			_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
			require.NoError(t, err)
			fired := failOnce(p.faults, target, occurrence, fault)
			err = sliceRun(ctx, t, p)
			require.True(t, fired(), "the fault was injected")
			require.ErrorIs(t, err, fault)
			p.faults.Set(nil)
			require.NoError(t, sliceRun(ctx, t, p), "a retry completes")

			pc, cc := p.providerCluster, p.consumerCluster
			_, err = pc.Certificates.Get(ctx, csr.CacheKey{ConsumerID: consumerID, Slice: "slice-a"})
			require.NoError(t, err)
			require.Len(t, pc.RBAC.ClusterRoleBindings.Objects(""), 1)
			_, ok := pc.RBAC.RoleBinding(offloadNS, rbac.BindingName(rbac.VirtualKubeletClusterRoleName))
			require.True(t, ok)
			_, ok = pc.RBAC.RoleBinding(clusterid.TenantNamespace(consumerID), rbac.BindingName(rbac.VirtualKubeletClusterRoleName))
			require.False(t, ok, "never in the tenant namespace")
			require.Contains(t, secretNames(cc), kubeconfig.SecretName(identity.ResourceSliceName("slice-a")))
			require.Len(t, cc.Identities.Objects(""), 2, "ControlPlane and slice")
		})
	}
}
