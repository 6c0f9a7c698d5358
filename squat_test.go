package kubepact_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/tenant"
)

// TestSquattedTenantNamespaceStopsTheHandshake: a tenant namespace someone
// else made, without the tenant namespace labels, stops the handshake on
// the side where it is, with a *tenant.NamespaceError naming it, before a
// nonce or a Tenant is made for it.
func TestSquattedTenantNamespaceStopsTheHandshake(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	squat := func(t *testing.T, ns interface {
		Ensure(context.Context, *corev1.Namespace) error
	}, remoteID string) {
		t.Helper()
		require.NoError(t, ns.Ensure(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterid.TenantNamespace(remoteID)}}))
	}
	requireSquatted := func(t *testing.T, err error, remoteID string) {
		t.Helper()
		var nerr *tenant.NamespaceError
		require.ErrorAs(t, err, &nerr)
		require.ErrorIs(t, err, tenant.ErrNotTenantNamespace)
		require.Equal(t, clusterid.TenantNamespace(remoteID), nerr.Namespace)
		require.Equal(t, tenant.NamespaceLabel, nerr.Label)
	}

	t.Run("on the provider", func(t *testing.T) {
		t.Parallel()
		p := newPair(t)
		squat(t, p.providerCluster.Namespaces, consumerID)
		_, err := p.provider.IssueNonce(ctx, consumerID)
		requireSquatted(t, err, consumerID)
		_, err = p.providerCluster.Nonces.Get(ctx, consumerID)
		require.ErrorIs(t, err, nonce.ErrNotFound, "no nonce in a squatted namespace")
	})
	t.Run("on the consumer", func(t *testing.T) {
		t.Parallel()
		p := newPair(t)
		n, err := p.provider.IssueNonce(ctx, consumerID)
		require.NoError(t, err)
		squat(t, p.consumerCluster.Namespaces, providerID)
		_, err = p.consumer.Tenant(ctx, providerID, n, nil)
		requireSquatted(t, err, providerID)
	})
}
