package kubepact_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/tenant"
)

// A Tenant verified against the nonce at hand before the redemption is not
// verified in full again when the redemption hands back that same nonce,
// but it is still refused when the nonce redeemed is another (it changed
// in between) and when, judged as of the redemption, its transcript has
// expired: with the errors Verify returns.
func TestAcceptRejudgesAPreverifiedTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const lifetime = 2 * time.Minute // shorter than the nonce's TTL
	setup := func(t *testing.T) (*pair, *peekingNonces, nonce.Entry, *kubepact.Consumer) {
		p := newPair(t)
		ports := p.providerCluster.ProviderPorts()
		peeking := &peekingNonces{Store: ports.Nonces}
		ports.Nonces, ports.Peek = peeking, peeking
		var err error
		p.provider, err = provider.New(providerID, p.providerCluster.Endpoint(), ports, &provider.Options{Clock: p.clock})
		require.NoError(t, err)
		c, err := consumer.New(consumerID, p.consumerCluster.ConsumerPorts(), &consumer.Options{Clock: p.clock, TranscriptLifetime: lifetime})
		require.NoError(t, err)
		_, err = p.provider.IssueNonce(ctx, consumerID)
		require.NoError(t, err)
		issued, err := peeking.Store.Get(ctx, consumerID)
		require.NoError(t, err)
		return p, peeking, issued, c
	}

	t.Run("the same nonce", func(t *testing.T) {
		t.Parallel()
		p, peeking, issued, c := setup(t)
		peeking.set(&issued)
		tn, err := c.Tenant(ctx, providerID, issued.Nonce, nil)
		require.NoError(t, err)
		_, err = p.provider.Accept(ctx, tn)
		require.NoError(t, err)
	})

	t.Run("the nonce changed before the redemption", func(t *testing.T) {
		t.Parallel()
		p, peeking, issued, c := setup(t)
		peeking.set(&issued) // the Tenant verifies against the nonce peeked
		tn, err := c.Tenant(ctx, providerID, issued.Nonce, nil)
		require.NoError(t, err)
		other, err := nonce.Generate(nil)
		require.NoError(t, err)
		require.NoError(t, peeking.Store.Put(ctx, consumerID, nonce.Entry{Nonce: other, IssuedAt: p.clock.Now()}))

		_, err = p.provider.Accept(ctx, tn)
		require.ErrorIs(t, err, keys.ErrBadSignature)
		var fe *tenant.FieldError
		require.ErrorAs(t, err, &fe)
		require.Equal(t, "spec.signature", fe.Field)
		require.Zero(t, p.providerCluster.Signer.Signed(), "nothing signed")
	})

	t.Run("the transcript expired as of the redemption", func(t *testing.T) {
		t.Parallel()
		p, peeking, issued, c := setup(t)
		tn, err := c.Tenant(ctx, providerID, issued.Nonce, nil)
		require.NoError(t, err)
		pub, err := keys.ParsePublicKey(tn.Spec.PublicKey)
		require.NoError(t, err)
		// The peek shows the nonce redeemed by this Tenant while its
		// transcript was valid; the store, that it was redeemed after the
		// transcript expired, within the nonce's TTL.
		who := nonce.Redemption{By: tenant.Digest(tn), Key: keys.Fingerprint(pub), At: p.clock.Now()}
		early := issued
		early.Redemption = &who
		peeking.set(&early)
		late := who
		late.At = p.clock.Now().Add(lifetime + time.Minute)
		_, err = peeking.Store.MarkRedeemed(ctx, consumerID, late)
		require.NoError(t, err)

		_, err = p.provider.Accept(ctx, tn)
		require.ErrorIs(t, err, tenant.ErrTranscriptExpired)
		var fe *tenant.FieldError
		require.ErrorAs(t, err, &fe)
		require.Equal(t, "metadata.annotations["+tenant.TranscriptSignatureAnnotation+"]", fe.Field)
		require.Zero(t, p.providerCluster.Signer.Signed(), "nothing signed")
	})
}
