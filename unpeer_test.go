package kubepact_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/internal/testkeys"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/tenant"
	"github.com/kubepact/kubepact/wire/intercept"
)

// Unauthenticate is an unpeering: the same consumer authenticates again at
// once, with the nonce the provider kept, with no step by hand, whether its
// identity key is its cluster key (Compatible) or a fresh one (Strict).
func TestUnpeerThenAuthenticateAgain(t *testing.T) {
	t.Parallel()
	for _, strict := range []bool{false, true} {
		t.Run(map[bool]string{false: "compatible consumer", true: "strict consumer"}[strict], func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			p := newModePair(t, tenant.Compatible, strict)
			_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
			require.NoError(t, err)
			before, err := p.provider.IssueNonce(ctx, consumerID)
			require.NoError(t, err)

			require.NoError(t, kubepact.Unauthenticate(ctx, p.consumer, p.provider))
			_, ok := p.providerCluster.RBAC.RoleBinding(tenantNS, rbac.BindingName(rbac.ControlPlaneClusterRoleName))
			require.False(t, ok, "the binding is gone")
			require.Empty(t, p.providerCluster.Tenants.Objects(""))
			_, err = p.provider.Revocation(ctx, consumerID)
			require.ErrorIs(t, err, lifecycle.ErrNotFound)

			p.clock.Step(nonce.DefaultTTL + time.Minute) // the kept nonce does not expire
			after, err := p.provider.IssueNonce(ctx, consumerID)
			require.NoError(t, err)
			require.True(t, before.Equal(after), "the nonce survives the unpeering")
			_, err = kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
			require.NoError(t, err)
			_, ok = p.providerCluster.RBAC.RoleBinding(tenantNS, rbac.BindingName(rbac.ControlPlaneClusterRoleName))
			require.True(t, ok)
		})
	}
}

// After an unpeering the certificate issued before is still valid: it
// keeps holding the consumer ID. Another key gets nonce.ErrRedeemed from
// the kept nonce and, when the administrator deletes the nonce Secret, a
// *lifecycle.HeldError until that certificate expires. Nothing is signed,
// stored or bound for it meanwhile.
func TestUnpeerKeepsTheIDHeld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newModePair(t, tenant.Compatible, true)
	done, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	leaf, err := csr.ParseCertificate(done.Identity.Spec.AuthParams.SignedCRT)
	require.NoError(t, err)
	require.NoError(t, kubepact.Unauthenticate(ctx, p.consumer, p.provider))

	other := testkeys.Generate(t, keys.Ed25519)
	squat := func() error {
		n, err := p.provider.IssueNonce(ctx, consumerID)
		require.NoError(t, err)
		tn, err := tenant.Build(consumerID, other, n, nil)
		require.NoError(t, err)
		_, err = p.provider.Accept(ctx, tn)
		return err
	}
	signed := p.providerCluster.Signer.Signed()
	require.ErrorIs(t, squat(), nonce.ErrRedeemed)

	_, err = p.providerCluster.Nonces.Consume(ctx, consumerID) // the administrator deletes liqo-nonce
	require.NoError(t, err)
	err = squat()
	var held *lifecycle.HeldError
	require.ErrorAs(t, err, &held)
	require.ErrorIs(t, err, lifecycle.ErrIdentityHeld)
	require.Equal(t, consumerID, held.ConsumerID)
	require.True(t, held.NotAfter.Equal(leaf.NotAfter))
	require.Equal(t, signed, p.providerCluster.Signer.Signed(), "nothing is signed")
	require.Empty(t, p.providerCluster.Tenants.Objects(""), "nothing is stored")
	_, ok := p.providerCluster.RBAC.RoleBinding(tenantNS, rbac.BindingName(rbac.ControlPlaneClusterRoleName))
	require.False(t, ok, "nothing is bound")

	p.clock.SetTime(leaf.NotAfter.Add(time.Second))
	require.NoError(t, squat(), "the ID is free once the certificate expired")
}

// The mark of an unpeering names the very certificate cached: once another
// certificate replaced it (here planted in the cache), the unpeered key is
// no longer taken for its holder.
func TestUnpeerMarkNamesTheCertificate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newModePair(t, tenant.Compatible, true)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	require.NoError(t, kubepact.Unauthenticate(ctx, p.consumer, p.provider))
	e, err := p.providerCluster.Nonces.Get(ctx, consumerID)
	require.NoError(t, err)
	require.NotNil(t, e.Redemption)
	require.NotEmpty(t, e.Redemption.Unpeered)

	e.Redemption.Unpeered = keys.Fingerprint(testkeys.Generate(t, keys.Ed25519).Public())
	require.NoError(t, p.providerCluster.Nonces.Put(ctx, consumerID, e))
	_, err = kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.ErrorIs(t, err, lifecycle.ErrIdentityHeld)
}

// An unpeering leaves a revocation record in force alone: an administrator's
// record, or a drain's, keeps its quarantine until readmit.
func TestUnpeerKeepsARecordInForce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	rec := lifecycle.Revocation{ConsumerID: consumerID, Until: p.clock.Now().Add(30 * 24 * time.Hour), Reason: "ByHand"}
	require.NoError(t, p.providerCluster.Revocations.Put(ctx, rec))

	require.NoError(t, kubepact.Unauthenticate(ctx, p.consumer, p.provider))
	got, err := p.provider.Revocation(ctx, consumerID)
	require.NoError(t, err)
	require.Equal(t, rec, got)
	_, err = kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	var revoked *lifecycle.RevokedError
	require.ErrorAs(t, err, &revoked)
	require.Equal(t, "ByHand", revoked.Reason)

	require.NoError(t, p.provider.Readmit(ctx, consumerID))
	_, err = kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
}

// A consumer asks for the quarantine with lifecycle.RevokeAnnotation "true"
// on its Tenant before deleting it; any other value is an unpeering.
func TestConsumerAsksForRevocation(t *testing.T) {
	t.Parallel()
	for value, revoked := range map[string]bool{"true": true, "false": false, "yes": false} {
		t.Run(value, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			p := newPair(t)
			_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
			require.NoError(t, err)
			st, err := p.providerCluster.Tenants.Get(ctx, tenantNS, consumerID)
			require.NoError(t, err)
			if st.Annotations == nil {
				st.Annotations = map[string]string{}
			}
			st.Annotations[lifecycle.RevokeAnnotation] = value
			_, err = p.providerCluster.Tenants.Apply(ctx, st)
			require.NoError(t, err)

			require.NoError(t, kubepact.Unauthenticate(ctx, p.consumer, p.provider))
			_, err = kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
			if !revoked {
				require.NoError(t, err)
				return
			}
			var rerr *lifecycle.RevokedError
			require.ErrorAs(t, err, &rerr)
			require.Equal(t, lifecycle.ReasonRevoked, rerr.Reason)
			require.Zero(t, p.providerCluster.Certificates.Len())
			_, err = p.providerCluster.Nonces.Get(ctx, consumerID)
			require.NoError(t, err, "the refused handshake's fresh nonce")
			require.NoError(t, p.provider.Readmit(ctx, consumerID))
			_, err = kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
			require.NoError(t, err)
		})
	}
}

// When the nonce cannot be marked, the unpeering fails before anything is
// deleted, and succeeds when retried.
func TestUnpeerMarksTheNonceFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := drainable(t)
	fired := failOnce(p.faults, intercept.Call{Op: "Nonces.Put"}, 0, injected[1].err)
	require.ErrorIs(t, p.provider.Forget(ctx, consumerID), injected[1].err)
	require.True(t, fired())
	_, ok := p.providerCluster.RBAC.RoleBinding(tenantNS, rbac.BindingName(rbac.ControlPlaneClusterRoleName))
	require.True(t, ok, "nothing is deleted before the nonce is marked")
	require.Len(t, p.providerCluster.Tenants.Objects(""), 1)

	require.NoError(t, p.provider.Forget(ctx, consumerID))
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
}
