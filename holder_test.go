package kubepact_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/internal/testkeys"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/tenant"
)

// TestAcceptRefusesAnIDHeldByAnotherKey: a Tenant whose Tenant was deleted
// without the provider forgetting the consumer leaves its certificate
// cached and valid; a handshake of another cluster key for the same ID is
// refused with a *lifecycle.HeldError, and nothing is signed, bound or
// recorded for it.
func TestAcceptRefusesAnIDHeldByAnotherKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	held, err := p.providerCluster.Certificates.Get(ctx, csr.CacheKey{ConsumerID: consumerID})
	require.NoError(t, err)

	// The Tenant goes, not through Forget: no revocation record, the
	// certificate stays cached, the nonce is gone with nothing bound to it.
	require.NoError(t, p.providerCluster.Tenants.Delete(ctx, clusterid.TenantNamespace(consumerID), consumerID))
	_, err = p.providerCluster.Nonces.Consume(ctx, consumerID)
	require.NoError(t, err)
	signed := p.providerCluster.Signer.Signed()

	n, err := p.provider.IssueNonce(ctx, consumerID)
	require.NoError(t, err)
	squatter, err := tenant.Build(consumerID, testkeys.Generate(t, keys.Ed25519), n, nil)
	require.NoError(t, err)
	_, err = p.provider.Accept(ctx, squatter)
	var he *lifecycle.HeldError
	require.ErrorAs(t, err, &he)
	require.ErrorIs(t, err, lifecycle.ErrIdentityHeld)
	require.Equal(t, consumerID, he.ConsumerID)
	require.Equal(t, lifecycle.FlowUnrecorded, he.Flow)
	require.True(t, he.NotAfter.After(p.clock.Now()))

	require.Equal(t, signed, p.providerCluster.Signer.Signed(), "nothing signed")
	again, err := p.providerCluster.Certificates.Get(ctx, csr.CacheKey{ConsumerID: consumerID})
	require.NoError(t, err)
	require.Equal(t, held, again, "the holder's certificate stays cached")
	_, err = p.providerCluster.Tenants.Get(ctx, clusterid.TenantNamespace(consumerID), consumerID)
	require.ErrorIs(t, err, tenant.ErrNotFound, "no Tenant recorded for the squatter")

	// Once the certificate expired, the ID is free again.
	p.clock.Step(provider.DefaultCertificateLifetime + csr.IssuedSkew + 1)
	n, err = p.provider.IssueNonce(ctx, consumerID)
	require.NoError(t, err)
	squatter, err = tenant.Build(consumerID, testkeys.Generate(t, keys.Ed25519), n, nil)
	require.NoError(t, err)
	_, err = p.provider.Accept(ctx, squatter)
	require.NoError(t, err)
}

// TestHolderReauthenticatesAndRenews: what the holder of the identity does
// is no conflict. A Strict consumer renews with a fresh key and
// re-authenticates, signed by the same cluster key, with yet another
// identity key; a Liqo-like consumer re-authenticates with its one key.
func TestHolderReauthenticatesAndRenews(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("strict: renewal with a fresh key, then re-authentication", func(t *testing.T) {
		t.Parallel()
		p, renew := strictAtDeadline(t)
		_, err := p.consumer.Renewed(ctx, providerID, renew, nil)
		require.NoError(t, err)
		// A fresh identity key for the next handshake: only the cluster
		// key is shared with what the provider holds.
		require.NoError(t, p.consumerCluster.IdentityKeys.Delete(ctx, "controlplane-"+providerID))
		done, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
		require.NoError(t, err, "a re-authentication signed by the same cluster key is the holder's")
		require.NotNil(t, done)
	})

	t.Run("compatible: re-authentication with the same key", func(t *testing.T) {
		t.Parallel()
		p := newPair(t)
		for range 2 {
			_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
			require.NoError(t, err)
		}
	})
}
