package controllers

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
)

// TestTenantOfSlice: a ResourceSlice created in a tenant namespace requeues
// the Tenant only when the Tenant is Cordoned or Drained, so the slice is
// marked or deleted; a slice of an Active Tenant (a consumer creating slice
// after slice) has its Tenant accepted again for nothing.
func TestTenantOfSlice(t *testing.T) {
	t.Parallel()
	scheme, err := NewScheme()
	require.NoError(t, err)
	const ns, id = "liqo-tenant-cl-consumer", "cl-consumer"
	slice := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "slice-a", Namespace: ns}}
	for _, tc := range []struct {
		condition authv1beta1.TenantCondition
		tenant    bool
		want      []reconcile.Request
	}{
		{tenant: false},
		{tenant: true, condition: ""},
		{tenant: true, condition: authv1beta1.TenantConditionActive},
		{tenant: true, condition: authv1beta1.TenantConditionCordoned, want: []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: ns, Name: id}}}},
		{tenant: true, condition: authv1beta1.TenantConditionDrained, want: []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: ns, Name: id}}}},
	} {
		b := fake.NewClientBuilder().WithScheme(scheme)
		if tc.tenant {
			b = b.WithObjects(&authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: id, Namespace: ns},
				Spec: authv1beta1.TenantSpec{ClusterID: id, TenantCondition: tc.condition}})
		}
		got := tenantOfSlice(b.Build())(context.Background(), slice)
		require.Equal(t, tc.want, got, "tenant %v, condition %q", tc.tenant, tc.condition)
	}
	other := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "slice-a", Namespace: "default"}}
	require.Empty(t, tenantOfSlice(fake.NewClientBuilder().WithScheme(scheme).Build())(context.Background(), other))
}
