package kubepact_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/internal/testkeys"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/tenant"
)

// liqoConsumer behaves as a Liqo v1.2 consumer does in SPEC §7's
// handshake: it keeps the nonce it signed in liqo-signed-nonce, refuses to
// sign a different one while that Secret exists, and sends a Tenant with no
// transcript, signed with its one cluster key.
type liqoConsumer struct {
	key         *keys.PrivateKey
	signedNonce *nonce.Nonce // the data.nonce of liqo-signed-nonce
}

var errDifferentNonce = errors.New("nonce secret already exists with a different nonce")

// authenticate runs one `liqoctl authenticate` against p.
func (c *liqoConsumer) authenticate(ctx context.Context, p *kubepact.Provider) (*authv1beta1.Identity, nonce.Nonce, error) {
	n, err := p.IssueNonce(ctx, consumerID) // the nonce Secret, ensured and read
	if err != nil {
		return nil, nonce.Nonce{}, err
	}
	if c.signedNonce != nil && !c.signedNonce.Equal(n) {
		return nil, n, errDifferentNonce
	}
	c.signedNonce = &n
	t, err := tenant.Build(consumerID, c.key, n, nil)
	if err != nil {
		return nil, n, err
	}
	id, err := p.Accept(ctx, t)
	return id, n, err
}

// A Liqo consumer re-authenticates against a kubepact provider with the
// nonce it holds, again and again, with no hand edits, while the nonce stays
// closed to every other key.
func TestLiqoConsumerReauthenticates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	liqo := &liqoConsumer{key: testkeys.Generate(t, keys.Ed25519)}

	var first nonce.Nonce
	for i := range 3 {
		id, n, err := liqo.authenticate(ctx, p.provider)
		require.NoError(t, err, "authentication %d", i+1)
		requireIdentityFor(t, id, mustLiqoTenant(t, liqo.key, n))
		if i == 0 {
			first = n
		}
		require.True(t, first.Equal(n), "the provider keeps the nonce the consumer holds")
		p.clock.Step(nonce.DefaultTTL + 1) // long after the nonce's TTL
	}

	intruder, err := tenant.Build(consumerID, testkeys.Generate(t, keys.Ed25519), first, nil)
	require.NoError(t, err)
	_, err = p.provider.Accept(ctx, intruder)
	require.ErrorIs(t, err, nonce.ErrRedeemed)

	// liqoctl unauthenticate deletes the Tenant; the Liqo consumer keeps its
	// liqo-signed-nonce, and authenticates again at once, with the same
	// nonce, with no step by hand on either cluster.
	require.NoError(t, p.provider.Forget(ctx, consumerID))
	id, n, err := liqo.authenticate(ctx, p.provider)
	require.NoError(t, err)
	require.True(t, first.Equal(n), "the unpeering kept the nonce")
	requireIdentityFor(t, id, mustLiqoTenant(t, liqo.key, n))

	// Past the nonce's TTL, and unpeered again: the nonce is still the
	// consumer's, and still closed to every other key.
	p.clock.Step(nonce.DefaultTTL + 1)
	require.NoError(t, p.provider.Forget(ctx, consumerID))
	n, err = p.provider.IssueNonce(ctx, consumerID)
	require.NoError(t, err)
	require.True(t, first.Equal(n))
	_, err = p.provider.Accept(ctx, intruder)
	require.ErrorIs(t, err, nonce.ErrRedeemed)
	_, _, err = liqo.authenticate(ctx, p.provider)
	require.NoError(t, err)
}

// After a drain the provider refuses the consumer until the administrator
// readmits it; it keeps the nonce, as after an unpeering, so that the Liqo
// consumer then comes back with the nonce it signed, with no step by hand.
func TestLiqoConsumerAfterDrain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	liqo := &liqoConsumer{key: testkeys.Generate(t, keys.Ed25519)}
	_, first, err := liqo.authenticate(ctx, p.provider)
	require.NoError(t, err)

	require.NoError(t, p.provider.Drain(ctx, consumerID))
	require.NoError(t, p.provider.Forget(ctx, consumerID))
	_, n, err := liqo.authenticate(ctx, p.provider)
	var revoked *lifecycle.RevokedError
	require.ErrorAs(t, err, &revoked)
	require.Equal(t, lifecycle.ReasonDrained, revoked.Reason)
	require.True(t, first.Equal(n), "the nonce is kept")

	require.NoError(t, p.provider.Readmit(ctx, consumerID))
	_, n, err = liqo.authenticate(ctx, p.provider)
	require.NoError(t, err)
	require.True(t, first.Equal(n))
}

// After a revocation asked for a suspected key the provider starts over: a
// new nonce, which the Liqo consumer refuses until its liqo-signed-nonce is
// deleted (as kubepact unauthenticate --revoke does on its side, with a new
// key), and nothing is bound before the administrator readmits it.
func TestLiqoConsumerAfterRevocation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	liqo := &liqoConsumer{key: testkeys.Generate(t, keys.Ed25519)}
	_, first, err := liqo.authenticate(ctx, p.provider)
	require.NoError(t, err)

	require.NoError(t, p.provider.Revoke(ctx, consumerID))
	_, n, err := liqo.authenticate(ctx, p.provider)
	require.ErrorIs(t, err, errDifferentNonce)
	require.False(t, first.Equal(n))
	liqo.signedNonce = nil
	_, _, err = liqo.authenticate(ctx, p.provider)
	var revoked *lifecycle.RevokedError
	require.ErrorAs(t, err, &revoked)
	require.Equal(t, lifecycle.ReasonRevoked, revoked.Reason)

	require.NoError(t, p.provider.Readmit(ctx, consumerID))
	_, _, err = liqo.authenticate(ctx, p.provider)
	require.NoError(t, err)
}

// A nonce redeemed by a Tenant the provider did not accept is not kept:
// the next consumer to ask gets a fresh one, so a stranger's failed Tenant
// cannot lock the consumer out.
func TestNonceOfARefusedTenantIsReplaced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	n, err := p.provider.IssueNonce(ctx, consumerID)
	require.NoError(t, err)
	bogus, err := tenant.Build(consumerID, testkeys.Generate(t, keys.Ed25519), n, nil)
	require.NoError(t, err)
	bogus.Spec.Signature[0] ^= 1
	_, err = p.provider.Accept(ctx, bogus)
	require.ErrorIs(t, err, keys.ErrBadSignature)

	liqo := &liqoConsumer{key: testkeys.Generate(t, keys.Ed25519)}
	_, fresh, err := liqo.authenticate(ctx, p.provider)
	require.NoError(t, err)
	require.False(t, n.Equal(fresh), "the nonce the refused Tenant redeemed was replaced")
}

func mustLiqoTenant(t *testing.T, key *keys.PrivateKey, n nonce.Nonce) *authv1beta1.Tenant {
	t.Helper()
	tn, err := tenant.Build(consumerID, key, n, nil)
	require.NoError(t, err)
	return tn
}
