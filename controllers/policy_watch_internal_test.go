package controllers

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/rbac"
)

// TestPolicyChangedRequeuesTheTenant: only a change of an
// AuthorizedConsumer's spec.policy requeues its consumer's Tenant, in the
// consumer's tenant namespace.
func TestPolicyChangedRequeuesTheTenant(t *testing.T) {
	t.Parallel()
	const id = "cl-consumer"
	no := false
	ac := &peeringv1alpha1.AuthorizedConsumer{ObjectMeta: metav1.ObjectMeta{Name: id, Generation: 1},
		Spec: peeringv1alpha1.AuthorizedConsumerSpec{ClusterID: id}}
	withheld := ac.DeepCopy()
	withheld.Generation = 2
	withheld.Spec.Policy = &peeringv1alpha1.ConsumerPolicy{ResourceSliceClusterWideRole: &no}
	status := ac.DeepCopy()
	status.Status.ObservedGeneration = 1

	p := policyChanged()
	require.True(t, p.Update(event.UpdateEvent{ObjectOld: ac, ObjectNew: withheld}), "withheld")
	require.True(t, p.Update(event.UpdateEvent{ObjectOld: withheld, ObjectNew: ac}), "the provider's again")
	require.False(t, p.Update(event.UpdateEvent{ObjectOld: ac, ObjectNew: status}), "a status write")
	require.False(t, p.Create(event.CreateEvent{Object: withheld}), "its reconciler records the Tenant")
	require.False(t, p.Delete(event.DeleteEvent{Object: withheld}), "its reconciler forgets the consumer")

	require.Equal(t, []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: "liqo-tenant-" + id, Name: id}}},
		tenantOfConsumer(context.Background(), withheld))
	bad := ac.DeepCopy()
	bad.Name = "Not_An_ID"
	require.Empty(t, tenantOfConsumer(context.Background(), bad))
}

// TestClusterRoleBindingStored: the binding reader finds the slice
// ClusterRoleBinding of a consumer by name, whatever it holds.
func TestClusterRoleBindingStored(t *testing.T) {
	t.Parallel()
	scheme, err := NewScheme()
	require.NoError(t, err)
	altered := rbac.ResourceSliceClusterRoleBinding("cl-altered")
	altered.Subjects = append(altered.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory"})
	r := newBindingReader(fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(rbac.ResourceSliceClusterRoleBinding("cl-bound"), altered).Build())
	for id, want := range map[string]bool{"cl-bound": true, "cl-altered": true, "cl-unbound": false} {
		got, err := r.ClusterRoleBindingStored(context.Background(), rbac.ResourceSliceClusterRoleBindingName(id))
		require.NoError(t, err)
		require.Equal(t, want, got, id)
	}
}
