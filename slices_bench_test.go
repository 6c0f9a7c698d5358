package kubepact_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact"
)

// BenchmarkAcceptSlice measures the provider judging a slice over the
// in-memory ports: "again" re-judges an accepted slice (the cached
// certificate, the bindings already there: what a resync costs), "new"
// runs a fresh slice end to end (build with its CSR, accept with signing
// and binding, apply the Identity with its online confirmation).
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
		}
	})
}
