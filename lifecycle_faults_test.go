package kubepact_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/wire/intercept"
)

// drainable returns a faulty pair whose consumer authenticated and holds a
// slice and slice bindings, the faults cleared.
func drainable(t *testing.T) *faultyPair {
	t.Helper()
	ctx := context.Background()
	p := newFaultyPair(t, false)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	_, _ = p.providerCluster.Slices.Put(context.Background(), slice("a"))
	for _, b := range rbac.ResourceSliceRoleBindings(consumerID, "edit", []string{"offloaded-1", "offloaded-2"}) {
		require.NoError(t, p.providerCluster.RBAC.ApplyRoleBinding(ctx, b))
	}
	p.faults = resetFaults(t, p)
	return p
}

// resetFaults starts recording calls afresh.
func resetFaults(t *testing.T, p *faultyPair) *intercept.Faults {
	t.Helper()
	f := &intercept.Faults{}
	var err error
	p.provider, err = provider.New(providerID, p.providerCluster.Endpoint(), intercept.Provider(p.providerCluster.ProviderPorts(), f),
		&provider.Options{Clock: p.clock})
	require.NoError(t, err)
	return f
}

// requireDrained checks that nothing grants the consumer anything and its
// certificates are recorded as revoked.
func requireDrained(t *testing.T, p *faultyPair) {
	t.Helper()
	require.Empty(t, p.providerCluster.RBAC.RoleBindings.Objects(""))
	require.Empty(t, p.providerCluster.Slices.Objects(""))
	_, err := p.providerCluster.Revocations.Get(context.Background(), consumerID)
	require.NoError(t, err)
}

// TestDrainFaultAtEveryCall fails each call of a drain in turn, before it
// runs and after it took effect: the drain fails with that error, and a
// second drain completes it.
func TestDrainFaultAtEveryCall(t *testing.T) {
	t.Parallel()
	probe := drainable(t)
	require.NoError(t, probe.provider.Drain(context.Background(), consumerID))
	requireDrained(t, probe)
	eachFault(t, false, probe.faults.Calls(), func(t *testing.T, _ bool, target intercept.Call, occurrence int, fault error) {
		p := drainable(t)
		fired := failOnce(p.faults, target, occurrence, fault)
		err := p.provider.Drain(context.Background(), consumerID)
		require.True(t, fired())
		require.ErrorIs(t, err, fault)
		require.NoError(t, p.provider.Drain(context.Background(), consumerID))
		requireDrained(t, p)
	})
}

// Revoke records the revocation before it deletes anything: when the
// record cannot be written, the binding stays and Revoke fails, so no
// consumer is ever revoked without its record.
func TestRevokeRecordsFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := drainable(t)
	fired := failOnce(p.faults, intercept.Call{Op: "Revocations.Put"}, 0, injected[1].err)
	require.ErrorIs(t, p.provider.Revoke(ctx, consumerID), injected[1].err)
	require.True(t, fired())
	_, ok := p.providerCluster.RBAC.RoleBinding(tenantNS, rbac.BindingName(rbac.ControlPlaneClusterRoleName))
	require.True(t, ok, "nothing is deleted before the record is written")
	require.Len(t, p.providerCluster.Tenants.Objects(""), 1)

	require.NoError(t, p.provider.Revoke(ctx, consumerID))
	_, err := p.provider.Revocation(ctx, consumerID)
	require.NoError(t, err)
	_, err = p.providerCluster.Revocations.Get(ctx, consumerID)
	require.NoError(t, err)
	_, err = kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.ErrorIs(t, err, lifecycle.ErrRevoked)
}
