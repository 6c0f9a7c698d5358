package kubepact_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/renewal"
)

// TestClusterKeyHandOver is a consumer's cluster key rotation, in memory:
// the next key signs a request for a fresh identity key, with the
// hand-over from the cluster key; the provider, committing both keys,
// lets the new one take over the identity the old key holds, without
// waiting for its certificate to expire; the consumer moves to the new
// certificate and switches keys, keeping the request that was committed,
// and the provider drops the old key. Without the hand-over, or without
// the old key committed beside the new one, the same request is refused:
// the old key holds the consumer ID.
func TestClusterKeyHandOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	first := p.commit(t)
	oldCert := p.applyGrant(t, first)
	old, err := p.consumer.PublicKey(ctx)
	require.NoError(t, err)

	next, err := p.consumer.PrepareClusterKeyRotation(ctx)
	require.NoError(t, err)
	require.False(t, keys.Equal(old, next))
	again, err := p.consumer.PrepareClusterKeyRotation(ctx)
	require.NoError(t, err)
	require.True(t, keys.Equal(next, again), "one next key, however often prepared")

	held := first.API()
	r, err := p.consumer.EnrolmentRequest(ctx, providerID, &held)
	require.NoError(t, err)
	require.NotNil(t, r.HandOver, "the request of a rotation carries the hand-over")
	require.True(t, keys.Equal(old, r.HandOver.From))
	fresh, err := r.PublicKey()
	require.NoError(t, err)
	oldLeaf, err := csr.ParseCertificate(oldCert)
	require.NoError(t, err)
	require.False(t, keys.Equal(oldLeaf.PublicKey, fresh), "for a fresh identity key")

	refused := func(t *testing.T, ac *peeringv1alpha1.AuthorizedConsumer, want error) {
		t.Helper()
		p.providerCluster.Commitments.Commit(ac)
		_, err := p.provider.Enrol(ctx, consumerID)
		var held *lifecycle.HeldError
		if want == nil {
			require.ErrorAs(t, err, &held)
		} else {
			require.ErrorIs(t, err, want)
		}
		stored, err := p.providerCluster.Tenants.Get(ctx, clusterid.TenantNamespace(consumerID), consumerID)
		require.NoError(t, err)
		require.Equal(t, first.Signature, stored.Spec.Signature, "the stored Tenant is the old key's still")
	}
	t.Run("without the hand-over the old key holds the ID", func(t *testing.T) {
		bare := *r
		bare.HandOver = nil
		refused(t, authorizedConsumer(t, &bare, old, next), nil)
	})
	t.Run("the old key not committed: its hand-over does not count", func(t *testing.T) {
		refused(t, authorizedConsumer(t, r, next), nil)
	})
	t.Run("a hand-over the old key did not sign", func(t *testing.T) {
		forged := *r
		h := *r.HandOver
		h.FromSignature = h.ToSignature
		forged.HandOver = &h
		refused(t, authorizedConsumer(t, &forged, old, next), enrol.ErrBadHandOver)
	})

	// Both keys committed while the rotation overlaps.
	p.providerCluster.Commitments.Commit(authorizedConsumer(t, r, old, next))
	newCert := p.applyGrant(t, r)
	newLeaf, err := csr.ParseCertificate(newCert)
	require.NoError(t, err)
	assert.True(t, keys.Equal(fresh, newLeaf.PublicKey), "the consumer holds the fresh key's certificate")
	ring := p.consumerCluster.IdentityKeys
	moved, err := ring.Get(ctx, identity.ControlPlaneName(providerID))
	require.NoError(t, err)
	assert.True(t, keys.Equal(fresh, moved.Key.Public()), "the fresh key is the identity's key")
	_, err = ring.Get(ctx, renewal.NextKeyName(identity.ControlPlaneName(providerID)))
	require.ErrorIs(t, err, keys.ErrNotFound, "and the old one is gone")
	stored, err := p.providerCluster.Tenants.Get(ctx, clusterid.TenantNamespace(consumerID), consumerID)
	require.NoError(t, err)
	storedKey, err := keys.ParsePublicKey(stored.Spec.PublicKey)
	require.NoError(t, err)
	assert.True(t, keys.Equal(next, storedKey), "the provider's Tenant is the new key's")

	switched, err := p.consumer.SwitchClusterKey(ctx)
	require.NoError(t, err)
	require.True(t, keys.Equal(next, switched))
	now, err := p.consumer.PublicKey(ctx)
	require.NoError(t, err)
	require.True(t, keys.Equal(next, now))
	none, err := p.consumer.NextClusterKey(ctx)
	require.NoError(t, err)
	require.Nil(t, none)

	// The committed request is still this consumer's, and its identity
	// key still its own: attested by the old key, attested again.
	committed := r.API()
	kept, err := p.consumer.EnrolmentRequest(ctx, providerID, &committed)
	require.NoError(t, err)
	require.Equal(t, r.API(), kept.API())

	// The provider drops the old key: nothing changes.
	p.providerCluster.Commitments.Commit(authorizedConsumer(t, r, next))
	id, err := p.provider.Enrol(ctx, consumerID)
	require.NoError(t, err)
	assert.Equal(t, newCert, id.Spec.AuthParams.SignedCRT)
}
