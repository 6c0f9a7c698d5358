package rbactest_test

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubepact/kubepact/fake"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/rbac/rbactest"
)

// The in-memory fake passes the ClusterBinder suite; package kube runs it
// on a real API server.
func TestClusterBinderConformance(t *testing.T) {
	t.Parallel()
	a := &fake.RBAC{}
	rbactest.RunClusterBinder(t, rbactest.ClusterBinderHarness{
		New: func(*testing.T) (rbac.ClusterBinder, rbactest.Port, func(context.Context, string) (*rbacv1.ClusterRoleBinding, error)) {
			return a, a, func(_ context.Context, name string) (*rbacv1.ClusterRoleBinding, error) {
				for _, b := range a.ClusterRoleBindings.Objects("") {
					if b.Name == name {
						return b, nil
					}
				}
				return nil, nil
			}
		},
		Parallel: true,
	})
}
