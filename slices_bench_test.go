package kubepact_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/resourceslice"
)

// BenchmarkAcceptSlice measures the provider judging a slice over the
// in-memory ports: "again" re-judges an accepted slice (the cached
// certificate, the bindings already there: what a resync costs), "new"
// runs a fresh slice end to end (build with its CSR, accept with signing
// and binding, apply the Identity with its online confirmation), then, off
// the clock, deletes it and lets 30 seconds pass, so the consumer stays
// within its bounds (resourceslice.Bounds: 64 live slices, 128 new
// certificates an hour) as a consumer in its steady state does; "refused"
// judges a slice over the bound on live slices (64 older ones hold
// certificates): what each slice of a flood costs.
func BenchmarkAcceptSlice(b *testing.B) {
	ctx := context.Background()
	p := newPair(b)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(b, err)

	b.Run("again", func(b *testing.B) {
		local := createSliceB(b, p, "slice-again")
		remote := replicateB(b, p, local)
		status, err := p.provider.AcceptSlice(ctx, remote)
		require.NoError(b, err)
		remote.Status = *status
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.provider.AcceptSlice(ctx, remote); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("new", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			local := createSliceB(b, p, fmt.Sprintf("slice-%d", i))
			status, err := p.provider.AcceptSlice(ctx, replicateB(b, p, local))
			if err != nil {
				b.Fatal(err)
			}
			local.Status = *status
			if _, err := p.consumer.ApplySliceIdentity(ctx, local, nil); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			ns := clusterid.TenantNamespace(consumerID)
			if err := p.provider.ForgetSlice(ctx, ns, local.Name); err != nil {
				b.Fatal(err)
			}
			if err := p.providerCluster.Slices.Delete(ctx, ns, local.Name); err != nil {
				b.Fatal(err)
			}
			p.clock.Step(30 * time.Second)
			b.StartTimer()
		}
	})
	b.Run("refused", func(b *testing.B) {
		q := newPair(b)
		_, err := kubepact.Authenticate(ctx, q.consumer, q.provider, nil)
		require.NoError(b, err)
		for i := range resourceslice.DefaultMaxSlices {
			_, err := q.provider.AcceptSlice(ctx, replicateB(b, q, createSliceB(b, q, fmt.Sprintf("slice-%03d", i))))
			require.NoError(b, err)
		}
		over := replicateB(b, q, createSliceB(b, q, "slice-over"))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := q.provider.AcceptSlice(ctx, over); !errors.Is(err, resourceslice.ErrSliceLimit) {
				b.Fatal(err)
			}
		}
	})
}
