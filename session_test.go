package kubepact_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/peer"
)

// TestSessionsOutOfOrder: a session used out of its order is refused with
// ErrInvalidConfig, and changes nothing.
func TestSessionsOutOfOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	ps := p.provider.Session(ctx, consumerID)
	defer ps.Close()
	cs := p.consumer.Session(ctx, providerID)
	defer cs.Close()

	n, err := p.provider.IssueNonce(ctx, consumerID)
	require.NoError(t, err)
	tn, err := cs.Tenant(ctx, n, &consumer.TenantOptions{OwnKey: true})
	require.NoError(t, err)
	cs.Close() // the signed-nonce Secret is written
	writes := p.writes()
	_, err = ps.Accept(ctx, tn)
	require.ErrorIs(t, err, peer.ErrInvalidConfig, "Accept before the session issued a nonce")
	require.Equal(t, writes, p.writes())

	other := p.consumer.Session(ctx, providerID)
	defer other.Close()
	_, err = other.Apply(ctx, nil, nil)
	require.ErrorIs(t, err, peer.ErrInvalidConfig, "Apply before the session built a Tenant")
	require.Equal(t, writes, p.writes())
}
