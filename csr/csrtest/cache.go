package csrtest

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/csr"
)

// CacheHarness tells RunCache how to use the Cache under test.
type CacheHarness struct {
	// New returns the Cache under test. It may return a new Cache or the
	// same one on every call: the suite only assumes that consumer IDs it
	// has not used yet have nothing cached. Required.
	New func(t *testing.T) csr.Cache
	// Prepare, when set, readies the Cache for consumerID before the suite
	// first uses that ID: an adapter that keeps entries in the consumer's
	// tenant namespace (csr.CacheKey.Namespace) creates it here.
	Prepare func(t *testing.T, consumerID string)
	// Parallel lets the suite's tests run in parallel with each other.
	Parallel bool
}

// RunCache checks that the Cache made by h.New meets the csr.Cache contract.
func RunCache(t *testing.T, h CacheHarness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("csrtest: CacheHarness.New is required")
	}
	t.Run("GetUnknownIsNotFound", func(t *testing.T) {
		parallel(t, h.Parallel)
		c, id := h.New(t), h.consumerID(t)
		for _, k := range []csr.CacheKey{{ConsumerID: id}, {ConsumerID: id, Slice: "slice-a"}} {
			_, err := c.Get(t.Context(), k)
			require.ErrorIs(t, err, csr.ErrNotFound, "%+v", k)
		}
	})
	t.Run("GetReturnsWhatPutStored", func(t *testing.T) {
		parallel(t, h.Parallel)
		c, id := h.New(t), h.consumerID(t)
		for _, k := range []csr.CacheKey{{ConsumerID: id}, {ConsumerID: id, Slice: "slice-a"}} {
			want := newEntry(k, "first")
			require.NoError(t, c.Put(t.Context(), k, want))
			requireEntry(t, c, k, want)
		}
	})
	t.Run("PutReplaces", func(t *testing.T) {
		parallel(t, h.Parallel)
		c, id := h.New(t), h.consumerID(t)
		k := csr.CacheKey{ConsumerID: id}
		require.NoError(t, c.Put(t.Context(), k, newEntry(k, "first")))
		want := newEntry(k, "second")
		require.NoError(t, c.Put(t.Context(), k, want))
		requireEntry(t, c, k, want)
	})
	t.Run("KeysAreIndependent", func(t *testing.T) {
		parallel(t, h.Parallel)
		c, a, b := h.New(t), h.consumerID(t), h.consumerID(t)
		ks := []csr.CacheKey{
			{ConsumerID: a},
			{ConsumerID: a, Slice: "slice-a"},
			{ConsumerID: a, Slice: "slice-b"},
			{ConsumerID: b},
			{ConsumerID: b, Slice: "slice-a"},
		}
		for _, k := range ks {
			require.NoError(t, c.Put(t.Context(), k, newEntry(k, "only")))
		}
		for _, k := range ks {
			requireEntry(t, c, k, newEntry(k, "only"))
		}
		require.NoError(t, c.Delete(t.Context(), ks[0]))
		_, err := c.Get(t.Context(), ks[0])
		require.ErrorIs(t, err, csr.ErrNotFound)
		for _, k := range ks[1:] {
			requireEntry(t, c, k, newEntry(k, "only"))
		}
	})
	t.Run("DeleteTwiceSucceeds", func(t *testing.T) {
		parallel(t, h.Parallel)
		c, id := h.New(t), h.consumerID(t)
		k := csr.CacheKey{ConsumerID: id, Slice: "slice-a"}
		require.NoError(t, c.Put(t.Context(), k, newEntry(k, "first")))
		require.NoError(t, c.Delete(t.Context(), k))
		_, err := c.Get(t.Context(), k)
		require.ErrorIs(t, err, csr.ErrNotFound, "Get after Delete")
		require.NoError(t, c.Delete(t.Context(), k), "second Delete")
	})
	t.Run("DeleteUnknownSucceeds", func(t *testing.T) {
		parallel(t, h.Parallel)
		c, id := h.New(t), h.consumerID(t)
		require.NoError(t, c.Delete(t.Context(), csr.CacheKey{ConsumerID: id}))
	})
	t.Run("CancelledContext", func(t *testing.T) {
		parallel(t, h.Parallel)
		c, id := h.New(t), h.consumerID(t)
		k := csr.CacheKey{ConsumerID: id}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := c.Get(ctx, k)
		require.ErrorIs(t, err, context.Canceled, "Get")
		require.ErrorIs(t, c.Put(ctx, k, newEntry(k, "first")), context.Canceled, "Put")
		require.ErrorIs(t, c.Delete(ctx, k), context.Canceled, "Delete")
	})
}

// consumerID returns a consumer ID no other test uses, prepared by the
// harness.
func (h CacheHarness) consumerID(t *testing.T) string {
	t.Helper()
	id := uniqueID(t)
	if h.Prepare != nil {
		h.Prepare(t, id)
	}
	return id
}

// newEntry returns an entry that names k and version, so entries of
// different keys or versions differ.
func newEntry(k csr.CacheKey, version string) csr.CacheEntry {
	return csr.CacheEntry{
		CSR:         fmt.Appendf(nil, "CSR of %s/%s, %s", k.ConsumerID, k.Slice, version),
		Certificate: fmt.Appendf(nil, "certificate of %s/%s, %s", k.ConsumerID, k.Slice, version),
	}
}

func requireEntry(t *testing.T, c csr.Cache, k csr.CacheKey, want csr.CacheEntry) {
	t.Helper()
	got, err := c.Get(t.Context(), k)
	require.NoError(t, err, "Get %+v", k)
	require.Equal(t, string(want.CSR), string(got.CSR), "CSR cached for %+v", k)
	require.Equal(t, string(want.Certificate), string(got.Certificate), "certificate cached for %+v", k)
}
