package kube_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/tenant"
)

// BenchmarkDrain measures a drain on the real provider: a consumer that
// authenticated, with 10 ResourceSlices and slice bindings in 5 namespaces,
// drained (condition, revocation record, bindings, slices). Setting up each
// consumer is not timed.
func BenchmarkDrain(b *testing.B) {
	ctx := context.Background()
	providerID := "bench-drain-provider"
	p := newProvider(b, providerID)
	binder := kube.NewRBAC(providerEnv.client)
	var namespaces []string
	for i := range 5 {
		ns := fmt.Sprintf("bench-drain-offloaded-%d", i)
		ensureNamespaceTB(b, ns)
		namespaces = append(namespaces, ns)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		consumerID := fmt.Sprintf("bench-drain-%d-%d", b.N, i)
		c := newConsumer(b, consumerID, "bench-drain-keys")
		_, err := kubepact.Authenticate(ctx, c, p, nil)
		require.NoError(b, err)
		for j := range 10 {
			_, err := providerEnv.dynamic.Resource(resourceSlices).Namespace(clusterid.TenantNamespace(consumerID)).
				Create(ctx, resourceSlice(fmt.Sprintf("slice-%d", j)), metav1.CreateOptions{})
			require.NoError(b, err)
		}
		for _, rb := range rbac.ResourceSliceRoleBindings(consumerID, "view", namespaces) {
			require.NoError(b, binder.ApplyRoleBinding(ctx, rb))
		}
		b.StartTimer()
		require.NoError(b, p.Drain(ctx, consumerID))
	}
}

// ensureNamespaceTB creates namespace name on the provider cluster; a
// tenant namespace (liqo-tenant-<ID>) gets the labels kubepact and Liqo
// give one, as Namespaces.Ensure refuses to take one without them.
func ensureNamespaceTB(tb testing.TB, name string) {
	tb.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if id, ok := strings.CutPrefix(name, clusterid.TenantNamespacePrefix); ok {
		ns = tenant.Namespace(id)
	}
	_, err := providerEnv.client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		tb.Fatal(err)
	}
}
