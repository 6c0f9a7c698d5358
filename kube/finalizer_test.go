package kube_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/tenant"
	"github.com/kubepact/kubepact/wire"
)

// TestAcceptFinalizer checks on the real provider cluster who puts
// tenant.Finalizer on a Tenant: not a provider with
// provider.Options.NoFinalizer, which no controller backs; a provider
// without it (a controller's) when it accepts the same Tenant later; and
// the first one, accepting the consumer's next Tenant, keeps it, although
// both apply Tenants under the same field manager, which would remove a
// finalizer its apply left out.
func TestAcceptFinalizer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const providerID, consumerID = "cl-provider-finalizer", "cl-consumer-finalizer"
	pc, err := wire.Connect(providerEnv.cluster.AdminConfig(), nil)
	require.NoError(t, err)
	cc, err := wire.Connect(consumerEnv.cluster.AdminConfig(), &wire.ConnectOptions{KeyNamespace: "liqo-finalizer-keys"})
	require.NoError(t, err)
	unattended, err := pc.Provider(providerID, &provider.Options{NoFinalizer: true})
	require.NoError(t, err)
	controller, err := pc.Provider(providerID, nil)
	require.NoError(t, err)
	c, err := cc.Consumer(consumerID, nil)
	require.NoError(t, err)

	n, err := unattended.IssueNonce(ctx, consumerID)
	require.NoError(t, err)
	tn, err := c.Tenant(ctx, providerID, n, nil)
	require.NoError(t, err)
	finalizers := func() []string {
		t.Helper()
		stored, err := kube.NewTenantStore(providerEnv.typed).Get(ctx, clusterid.TenantNamespace(consumerID), consumerID)
		require.NoError(t, err)
		return stored.Finalizers
	}

	_, err = unattended.Accept(ctx, tn)
	require.NoError(t, err)
	require.Empty(t, finalizers(), "no controller would remove it")
	_, err = controller.Accept(ctx, tn)
	require.NoError(t, err)
	require.Equal(t, []string{tenant.Finalizer}, finalizers(), "the controller's cleanup runs before the Tenant goes")
	// The consumer re-authenticates with the nonce it holds: a new Tenant
	// (its transcript expires at another time), written again.
	later, err := cc.Consumer(consumerID, &consumer.Options{TranscriptLifetime: 7 * time.Minute})
	require.NoError(t, err)
	again, err := later.Tenant(ctx, providerID, n, nil)
	require.NoError(t, err)
	require.NotEqual(t, tn.Annotations, again.Annotations)
	_, err = unattended.Accept(ctx, again)
	require.NoError(t, err)
	require.Equal(t, []string{tenant.Finalizer}, finalizers(), "a finalizer stored stays")
	require.NoError(t, controller.Forget(ctx, consumerID))
}
