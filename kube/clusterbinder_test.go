package kube_test

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/rbac/rbactest"
)

func TestClusterBinderConformance(t *testing.T) {
	rbactest.RunClusterBinder(t, rbactest.ClusterBinderHarness{
		New: func(*testing.T) (rbac.ClusterBinder, rbactest.Port, func(context.Context, string) (*rbacv1.ClusterRoleBinding, error)) {
			a := kube.NewRBAC(providerEnv.client)
			return a, a, func(ctx context.Context, name string) (*rbacv1.ClusterRoleBinding, error) {
				return absent(providerEnv.client.RbacV1().ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{}))
			}
		},
		Parallel: true,
	})
}
