package fake_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/lifecycle/lifecycletest"
	"github.com/kubepact/kubepact/wire/memory"
)

func TestLifecyclePortsConformance(t *testing.T) {
	t.Parallel()
	lifecycletest.Run(t, lifecycletest.Harness{New: func(t *testing.T) lifecycletest.Env {
		c, err := memory.NewCluster("lifecycle", nil)
		require.NoError(t, err)
		return lifecycletest.Env{
			Ports:    c.LifecyclePorts(),
			Tenants:  c.Tenants,
			PutSlice: func(_ *testing.T, s *authv1beta1.ResourceSlice) { _, _ = c.Slices.Put(context.Background(), s) },
			Slices: func(_ *testing.T, namespace string) []authv1beta1.ResourceSlice {
				var out []authv1beta1.ResourceSlice
				for _, s := range c.Slices.Objects(namespace) {
					out = append(out, *s)
				}
				return out
			},
			PutRoleBinding: func(t *testing.T, b *rbacv1.RoleBinding) {
				require.NoError(t, c.RBAC.ApplyRoleBinding(context.Background(), b))
			},
			PutClusterRoleBinding: func(t *testing.T, b *rbacv1.ClusterRoleBinding) {
				require.NoError(t, c.RBAC.ApplyClusterRoleBinding(context.Background(), b))
			},
			BindingExists: func(_ *testing.T, namespace, name string) bool {
				if namespace != "" {
					_, ok := c.RBAC.RoleBinding(namespace, name)
					return ok
				}
				for _, b := range c.RBAC.ClusterRoleBindings.Objects("") {
					if b.Name == name {
						return true
					}
				}
				return false
			},
			EnsureNamespace: func(*testing.T, string) {},
		}
	}})
}
