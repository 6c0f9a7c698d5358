package kubepact_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/tenant"
	"github.com/kubepact/kubepact/wire/memory"
)

// BenchmarkProviderRenewLiqo measures a provider answering a Liqo
// consumer's Renew (no CSR): the Tenant's credentials, in memory.
func BenchmarkProviderRenewLiqo(b *testing.B) {
	ctx := context.Background()
	p := newPair(b)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(b, err)
	req, err := p.consumer.RenewRequest(ctx, providerID, nil)
	require.NoError(b, err)
	r := replicateRenew(req.Renew)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.provider.Renew(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStrictRenewal measures one whole Strict renewal in memory: a
// fresh key and its CSR, the provider's check and signature, the
// consumer's verification, online confirmation, switch and key promotion.
func BenchmarkStrictRenewal(b *testing.B) {
	ctx := context.Background()
	p := newStrictPair(b)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		req, err := p.consumer.RenewRequest(ctx, providerID, nil)
		if err != nil {
			b.Fatal(err)
		}
		p.clock.SetTime(req.At)
		if req, err = p.consumer.RenewRequest(ctx, providerID, req.Renew); err != nil {
			b.Fatal(err)
		}
		params, err := p.provider.Renew(ctx, replicateRenew(req.Renew))
		if err != nil {
			b.Fatal(err)
		}
		req.Renew.Status.AuthParams = params
		a, err := p.consumer.Renewed(ctx, providerID, req.Renew, nil)
		if err != nil || a == nil {
			b.Fatal("no renewal", err)
		}
	}
}

// newStrictPair is newModePair(tb, tenant.Compatible, true) for benchmarks.
func newStrictPair(tb testing.TB) *pair {
	tb.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	pc, err := memory.NewCluster(providerID, &memory.ClusterOptions{Clock: clk, Server: "https://provider.example:6443"})
	require.NoError(tb, err)
	cc, err := memory.NewCluster(consumerID, &memory.ClusterOptions{Clock: clk})
	require.NoError(tb, err)
	require.NoError(tb, cc.Reach(pc))
	p := &pair{clock: clk, providerCluster: pc, consumerCluster: cc}
	p.provider, err = provider.New(providerID, pc.Endpoint(), pc.ProviderPorts(), &provider.Options{Clock: clk, Policy: tenant.Compatible})
	require.NoError(tb, err)
	p.consumer, err = consumer.New(consumerID, cc.ConsumerPorts(), &consumer.Options{Clock: clk, Strict: true})
	require.NoError(tb, err)
	return p
}
