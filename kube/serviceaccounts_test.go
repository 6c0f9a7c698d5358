package kube_test

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/saidentity"
	"github.com/kubepact/kubepact/saidentity/saidentitytest"
)

func TestServiceAccountIdentityConformance(t *testing.T) {
	saidentitytest.Run(t, saidentitytest.Harness{
		New: func(*testing.T) (saidentity.ServiceAccounts, saidentity.Binder) {
			return kube.NewServiceAccounts(providerEnv.client), kube.NewServiceAccountRBAC(providerEnv.client)
		},
		Namespace: ensureNamespace,
		Plant: func(t *testing.T, obj metav1.Object) {
			api := providerEnv.client.RbacV1()
			var err error
			switch o := obj.(type) {
			case *rbacv1.Role:
				_, err = api.Roles(o.Namespace).Create(t.Context(), o, metav1.CreateOptions{})
			case *rbacv1.RoleBinding:
				_, err = api.RoleBindings(o.Namespace).Create(t.Context(), o, metav1.CreateOptions{})
			case *rbacv1.ClusterRole:
				_, err = api.ClusterRoles().Create(t.Context(), o, metav1.CreateOptions{})
			case *rbacv1.ClusterRoleBinding:
				_, err = api.ClusterRoleBindings().Create(t.Context(), o, metav1.CreateOptions{})
			default:
				t.Fatalf("cannot plant %T", obj)
			}
			if err != nil {
				t.Fatal(err)
			}
		},
		Parallel: true,
	})
}
