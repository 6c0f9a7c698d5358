package rbactest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubepact/kubepact/fake"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/rbac/rbactest"
	"github.com/kubepact/kubepact/wire/intercept"
	"github.com/kubepact/kubepact/wire/memory"
)

// The in-memory fake passes the Reviewer suite; package kube runs it on a
// real API server. One fake serves every test, as one API server would:
// the suite's names keep the tests apart.
func TestReviewerConformance(t *testing.T) {
	t.Parallel()
	a := &fake.RBAC{}
	rbactest.RunReviewer(t, rbactest.ReviewerHarness{
		New: func(*testing.T) rbactest.ReviewedBinder { return a },
		ClusterRoleBinding: func(t *testing.T, b *rbacv1.ClusterRoleBinding) {
			require.NoError(t, a.ApplyClusterRoleBinding(t.Context(), b))
		},
		Parallel: true,
	})
}

// The same suite through intercept.Faults, which wraps every provider port: the
// hooks pass reviews through, record them, and inject failures that
// CheckUnprivileged does not mistake for "unprivileged".
func TestReviewerConformanceThroughFaults(t *testing.T) {
	t.Parallel()
	c, err := memory.NewCluster("provider", nil)
	require.NoError(t, err)
	f := &intercept.Faults{}
	b, ok := intercept.Provider(c.ProviderPorts(), f).RBAC.(rbac.Binder)
	require.True(t, ok, "the intercepted RBAC port is an rbac.Binder")
	t.Run("Suite", func(t *testing.T) {
		rbactest.RunReviewer(t, rbactest.ReviewerHarness{
			// The hooks wrap the provider's port, which installs no role:
			// the suite's roles go straight to the cluster.
			New: func(*testing.T) rbactest.ReviewedBinder {
				return struct {
					rbac.Binder
					rbac.Installer
				}{b, c.RBAC}
			},
			ClusterRoleBinding: func(t *testing.T, crb *rbacv1.ClusterRoleBinding) {
				require.NoError(t, c.RBAC.ApplyClusterRoleBinding(t.Context(), crb))
			},
			Parallel: true,
		})
	})
	require.Contains(t, f.Calls(), intercept.Call{Op: "RBAC.Allowed"})
	require.Contains(t, f.Calls(), intercept.Call{Op: "RBAC.Allowed", After: true})

	for _, after := range []bool{false, true} {
		injected := errors.New("injected")
		f.Set(func(_ context.Context, call intercept.Call) error {
			if call.Op == "RBAC.Allowed" && call.After == after {
				return injected
			}
			return nil
		})
		err := rbac.CheckUnprivileged(t.Context(), b, "cl-consumer", []string{"liqo.io"})
		require.ErrorIs(t, err, injected, "after: %v", after)
		require.NotErrorIs(t, err, rbac.ErrPrivilegedUser)
	}
}
