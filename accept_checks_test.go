package kubepact_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/accept"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/step"
)

var errNotListed = errors.New("consumer not on the allow-list")

// allowList is a check of a caller's own: it refuses every consumer while
// closed.
func allowList(stage accept.Stage, closed *atomic.Bool, asked *atomic.Int32) accept.Check {
	return accept.Check{
		Name: "allow-list", Stage: stage, Why: "only listed consumers peer",
		Run: func(context.Context, *accept.Facts) error {
			asked.Add(1)
			if closed.Load() {
				return errNotListed
			}
			return nil
		},
	}
}

// TestCallerCheckIsTheDecision adds a check through provider.Options.Checks
// and observes its refusal from both Accept and Unchanged: the decision
// is one, whichever records it is taken on. A refusal in the issue stage
// signs and writes nothing; one in the redeem stage leaves the nonce
// unspent.
func TestCallerCheckIsTheDecision(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		stage    accept.Stage
		wantStep step.Name
	}{
		{accept.StageRedeem, step.TenantApplied},
		{accept.StageIssue, step.CertificateIssued},
	} {
		t.Run(tc.stage.String(), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			p := newPair(t)
			var closed atomic.Bool
			var asked atomic.Int32
			prov, err := provider.New(providerID, p.providerCluster.Endpoint(), p.providerCluster.ProviderPorts(),
				&provider.Options{Clock: p.clock, Checks: []accept.Check{allowList(tc.stage, &closed, &asked)}})
			require.NoError(t, err)
			p.provider = prov

			// A first handshake while the check refuses: refused with its
			// error, in its step; before the redemption, its nonce stays
			// unspent.
			closed.Store(true)
			n, err := prov.IssueNonce(ctx, consumerID)
			require.NoError(t, err)
			tn := ourTenantFor(t, p, n)
			writes, signed := p.writes(), p.providerCluster.Signer.Signed()
			_, err = prov.Accept(ctx, tn)
			requireRefusal(t, err, tc.wantStep)
			require.Equal(t, writes, p.writes(), "a refused Tenant changed something")
			require.Equal(t, signed, p.providerCluster.Signer.Signed(), "a refused Tenant got a certificate")
			e, err := p.providerCluster.Nonces.Get(ctx, consumerID)
			require.NoError(t, err)
			require.Equal(t, tc.stage == accept.StageRedeem, e.Redemption == nil, "the nonce's redemption")

			closed.Store(false)
			stored := acceptedTenant(t, p)
			recs := cachedRecords(p.providerCluster)
			_, ok := prov.Unchanged(ctx, stored, recs)
			require.True(t, ok, "unchanged while the check passes")

			closed.Store(true)
			asked.Store(0)
			_, ok = prov.Unchanged(ctx, stored, recs)
			require.False(t, ok, "Unchanged vouched for a Tenant the check refuses")
			require.Positive(t, asked.Load())

			writes, signed = p.writes(), p.providerCluster.Signer.Signed()
			_, err = prov.Accept(ctx, stored)
			requireRefusal(t, err, tc.wantStep)
			require.Equal(t, writes, p.writes(), "a refused Tenant changed something")
			require.Equal(t, signed, p.providerCluster.Signer.Signed())
		})
	}
}

// requireRefusal fails t unless err is the allow-list's refusal, in the
// step want.
func requireRefusal(t *testing.T, err error, want step.Name) {
	t.Helper()
	require.ErrorIs(t, err, errNotListed)
	var stepErr *step.Error
	require.ErrorAs(t, err, &stepErr)
	require.Equal(t, want, stepErr.Step)
}
