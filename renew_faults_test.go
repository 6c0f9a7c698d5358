package kubepact_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/renewal"
	"github.com/kubepact/kubepact/wire/intercept"
	"github.com/kubepact/kubepact/wire/memory"
)

var errInjected = errors.New("injected failure")

// newFaultyStrictPair returns an authenticated Strict pair whose
// consumer's ports go through faults.
func newFaultyStrictPair(t *testing.T, faults *intercept.Faults) *pair {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	pc, err := memory.NewCluster(providerID, &memory.ClusterOptions{Clock: clk, Server: "https://provider.example:6443"})
	require.NoError(t, err)
	cc, err := memory.NewCluster(consumerID, &memory.ClusterOptions{Clock: clk})
	require.NoError(t, err)
	require.NoError(t, cc.Reach(pc))
	p := &pair{clock: clk, providerCluster: pc, consumerCluster: cc}
	p.provider, err = provider.New(providerID, pc.Endpoint(), pc.ProviderPorts(), &provider.Options{Clock: clk})
	require.NoError(t, err)
	p.consumer, err = consumer.New(consumerID, intercept.Consumer(cc.ConsumerPorts(), faults), &consumer.Options{Clock: clk, Strict: true})
	require.NoError(t, err)
	_, err = kubepact.Authenticate(context.Background(), p.consumer, p.provider, nil)
	require.NoError(t, err)
	return p
}

// renewalRound runs one renewal round from the deadline on, as the
// controllers do, and returns the first error.
func renewalRound(ctx context.Context, p *pair) error {
	req, err := p.consumer.RenewRequest(ctx, providerID, nil)
	if err != nil {
		return err
	}
	p.clock.SetTime(req.At)
	if req, err = p.consumer.RenewRequest(ctx, providerID, req.Renew); err != nil {
		return err
	}
	params, err := p.provider.Renew(ctx, replicateRenew(req.Renew))
	if err != nil {
		return err
	}
	req.Renew.Status.AuthParams = params
	_, err = p.consumer.Renewed(ctx, providerID, req.Renew, nil)
	return err
}

// requireWorkingKubeconfig checks that the kubeconfig Secret holds a key
// and a certificate for it that the provider takes for the consumer.
func requireWorkingKubeconfig(t *testing.T, p *pair) *keys.PrivateKey {
	t.Helper()
	_, cfg := kubeconfigSecret(t, p)
	key := clientKey(t, cfg)
	require.True(t, keys.Equal(key.Public(), clientCert(t, cfg).PublicKey), "the kubeconfig's certificate is for its key")
	user, _, err := p.consumerCluster.Reviewer.Review(context.Background(), cfg)
	require.NoError(t, err, "the provider takes the kubeconfig")
	require.Equal(t, consumerID, user)
	return key
}

// TestStrictRenewalSurvivesEveryFailure fails, in turn, every call the
// consumer's ports see during a renewal round, before and after it takes
// effect. After each failure the kubeconfig Secret still works; once the
// failures stop, the Identity reconciler's re-apply and the next rounds
// complete the switch to a fresh key and delete the old one.
func TestStrictRenewalSurvivesEveryFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clean := &intercept.Faults{}
	p := newFaultyStrictPair(t, clean)
	before := len(clean.Calls())
	require.NoError(t, renewalRound(ctx, p))
	calls := clean.Calls()[before:]
	require.NotEmpty(t, calls)

	for i, c := range calls {
		t.Run(fmt.Sprintf("%d %s after=%t", i, c.Op, c.After), func(t *testing.T) {
			t.Parallel()
			faults := &intercept.Faults{}
			p := newFaultyStrictPair(t, faults)
			name := identity.ControlPlaneName(providerID)
			oldKey, err := p.consumerCluster.IdentityKeys.Get(ctx, name)
			require.NoError(t, err)
			n := -1
			faults.Set(func(_ context.Context, got intercept.Call) error {
				if n++; n == i {
					return errInjected
				}
				return nil
			})
			_ = renewalRound(ctx, p)
			faults.Set(nil)
			requireWorkingKubeconfig(t, p)

			// Recovery: the Identity reconciler applies the stored
			// Identity again, and renewal rounds go on.
			id, ok := p.consumerCluster.Identities.Get(clusterid.TenantNamespace(providerID), name)
			require.True(t, ok)
			_, err = p.consumer.Apply(ctx, providerID, id, nil)
			require.NoError(t, err)
			for range 2 {
				require.NoError(t, renewalRound(ctx, p))
			}
			_, err = p.consumer.RenewRequest(ctx, providerID, nil)
			require.NoError(t, err)
			key := requireWorkingKubeconfig(t, p)
			require.False(t, keys.Equal(oldKey.Key.Public(), key.Public()), "a fresh key")
			cur, err := p.consumerCluster.IdentityKeys.Get(ctx, name)
			require.NoError(t, err)
			require.True(t, keys.Equal(key.Public(), cur.Key.Public()))
			_, err = p.consumerCluster.IdentityKeys.Get(ctx, renewal.NextKeyName(name))
			require.ErrorIs(t, err, keys.ErrNotFound)
			require.Equal(t, 1, p.consumerCluster.IdentityKeys.Len(), "the old key is gone")
		})
	}
}
