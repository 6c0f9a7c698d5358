package fake_test

import (
	"sync"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/fake"
	"github.com/kubepact/kubepact/saidentity"
	"github.com/kubepact/kubepact/saidentity/saidentitytest"
)

func TestServiceAccountIdentityConformance(t *testing.T) {
	var binders sync.Map // *testing.T → *fake.ServiceAccountRBAC
	saidentitytest.Run(t, saidentitytest.Harness{
		New: func(t *testing.T) (saidentity.ServiceAccounts, saidentity.Binder) {
			b := &fake.ServiceAccountRBAC{}
			binders.Store(t, b)
			return &fake.ServiceAccounts{}, b
		},
		Namespace: func(*testing.T, string) {},
		Plant: func(t *testing.T, obj metav1.Object) {
			v, ok := binders.Load(t)
			if !ok {
				t.Fatal("Plant before New")
			}
			b := v.(*fake.ServiceAccountRBAC)
			switch o := obj.(type) {
			case *rbacv1.Role:
				b.PlantRole(o)
			case *rbacv1.RoleBinding:
				b.PlantRoleBinding(o)
			case *rbacv1.ClusterRole:
				b.PlantClusterRole(o)
			case *rbacv1.ClusterRoleBinding:
				b.PlantClusterRoleBinding(o)
			default:
				t.Fatalf("cannot plant %T", obj)
			}
		},
		Parallel: true,
	})
}
