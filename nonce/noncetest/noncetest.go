// Package noncetest is the conformance suite of nonce.Store.
//
// Run checks the contract written on nonce.Store:
//
//   - Get and Consume of a cluster with no nonce fail with an error wrapping
//     nonce.ErrNotFound;
//   - Get returns what Put stored, without removing it, and Put replaces
//     the earlier nonce;
//   - Consume returns the stored entry and removes it, and of concurrent
//     Consumes of one nonce exactly one gets it, the others ErrNotFound;
//   - MarkRedeemed of a cluster with no nonce fails with ErrNotFound; it
//     records a redemption once, keeps the nonce and its issue time, and
//     returns the first redemption to every later caller; of concurrent
//     MarkRedeemed calls exactly one redemption is stored and all callers
//     get it; Get returns it; Put replaces a redeemed entry with an
//     unredeemed one;
//   - every call returns the TTL stored with the nonce (Entry.TTL) as Put
//     stored it, through MarkRedeemed too, and an entry stored without a
//     TTL comes back without one, also after Put replaced one with a TTL;
//   - each cluster ID has its own nonce;
//   - a call with a cancelled context fails with an error wrapping
//     context.Canceled.
//
// IssuedAt is compared to within a second, since an adapter may store it as
// RFC 3339 text; Nonce is compared with Nonce.Equal; TTL exactly.
//
// Every test uses cluster IDs no other test uses (random, 19 characters),
// calls Harness.Prepare before it first uses one, and deletes nothing it does
// not need to, so the suite runs against a real API server as well as
// against fake.NonceStore.
//
// # Usage
//
// From the test of an adapter over a real API server (sketch):
//
//	func TestNonceStoreConformance(t *testing.T) {
//		client := kubernetes.NewForConfigOrDie(testcluster.StartT(t).AdminConfig())
//		noncetest.Run(t, noncetest.Harness{
//			New: func(t *testing.T) nonce.Store { return kube.NewNonceStore(client) },
//			Prepare: func(t *testing.T, clusterID string) {
//				// The nonce Secret lives in the consumer's tenant namespace.
//				ns := tenant.Namespace(clusterID)
//				_, err := client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{})
//				if err != nil && !apierrors.IsAlreadyExists(err) {
//					t.Fatal(err)
//				}
//			},
//			Parallel: true,
//		})
//	}
package noncetest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/nonce"
)

// Harness tells Run how to use the Store under test.
type Harness struct {
	// New returns the Store under test. It may return a new Store or the
	// same one on every call: the suite only assumes that a cluster ID it
	// has not used yet holds no nonce. Required.
	New func(t *testing.T) nonce.Store
	// Prepare, when set, readies the Store for clusterID before the suite
	// first uses that ID: an adapter that keeps the nonce in the tenant
	// namespace creates that namespace here.
	Prepare func(t *testing.T, clusterID string)
	// Parallel lets the suite's tests run in parallel with each other. It
	// is safe for stores that are safe for concurrent use and for a real API
	// server.
	Parallel bool
}

// ConcurrentConsumers is how many goroutines race to Consume one nonce.
const ConcurrentConsumers = 20

// Run checks that the Store made by h.New meets the nonce.Store contract.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("noncetest: Harness.New is required")
	}
	t.Run("GetUnknownIsNotFound", func(t *testing.T) {
		h.parallel(t)
		s, id := h.New(t), h.clusterID(t)
		_, err := s.Get(t.Context(), id)
		require.ErrorIs(t, err, nonce.ErrNotFound)
	})
	t.Run("ConsumeUnknownIsNotFound", func(t *testing.T) {
		h.parallel(t)
		s, id := h.New(t), h.clusterID(t)
		_, err := s.Consume(t.Context(), id)
		require.ErrorIs(t, err, nonce.ErrNotFound)
	})
	t.Run("GetReturnsWhatPutStoredAndKeepsIt", func(t *testing.T) {
		h.parallel(t)
		s, id := h.New(t), h.clusterID(t)
		want := newEntry(t)
		require.NoError(t, s.Put(t.Context(), id, want))
		for range 2 {
			got, err := s.Get(t.Context(), id)
			require.NoError(t, err)
			requireSameEntry(t, want, got)
		}
	})
	t.Run("PutReplaces", func(t *testing.T) {
		h.parallel(t)
		s, id := h.New(t), h.clusterID(t)
		first, second := newEntry(t), newEntry(t)
		second.IssuedAt = first.IssuedAt.Add(time.Hour)
		require.NoError(t, s.Put(t.Context(), id, first))
		require.NoError(t, s.Put(t.Context(), id, second))
		got, err := s.Get(t.Context(), id)
		require.NoError(t, err)
		requireSameEntry(t, second, got)
	})
	t.Run("TTLIsKept", func(t *testing.T) {
		h.parallel(t)
		s, id := h.New(t), h.clusterID(t)
		want := newEntry(t)
		want.TTL = 90*time.Second + time.Nanosecond
		require.NoError(t, s.Put(t.Context(), id, want))
		got, err := s.Get(t.Context(), id)
		require.NoError(t, err)
		requireSameEntry(t, want, got)
		got, err = s.MarkRedeemed(t.Context(), id, newRedemption(t))
		require.NoError(t, err)
		requireSameEntry(t, want, got)
		got, err = s.Get(t.Context(), id)
		require.NoError(t, err)
		requireSameEntry(t, want, got)
		got, err = s.Consume(t.Context(), id)
		require.NoError(t, err)
		requireSameEntry(t, want, got)
	})
	t.Run("NoTTLStaysNone", func(t *testing.T) {
		h.parallel(t)
		s, id := h.New(t), h.clusterID(t)
		// A nonce issued without a TTL, as Liqo issues them, replacing
		// one issued with a TTL.
		require.NoError(t, s.Put(t.Context(), id, newEntry(t)))
		want := newEntry(t)
		want.TTL = 0
		require.NoError(t, s.Put(t.Context(), id, want))
		got, err := s.Get(t.Context(), id)
		require.NoError(t, err)
		requireSameEntry(t, want, got)
		got, err = s.MarkRedeemed(t.Context(), id, newRedemption(t))
		require.NoError(t, err)
		requireSameEntry(t, want, got)
		got, err = s.Get(t.Context(), id)
		require.NoError(t, err)
		requireSameEntry(t, want, got)
	})
	t.Run("ConsumeReturnsAndRemoves", func(t *testing.T) {
		h.parallel(t)
		s, id := h.New(t), h.clusterID(t)
		want := newEntry(t)
		require.NoError(t, s.Put(t.Context(), id, want))
		got, err := s.Consume(t.Context(), id)
		require.NoError(t, err)
		requireSameEntry(t, want, got)
		_, err = s.Get(t.Context(), id)
		require.ErrorIs(t, err, nonce.ErrNotFound, "Get after Consume")
		_, err = s.Consume(t.Context(), id)
		require.ErrorIs(t, err, nonce.ErrNotFound, "second Consume")
	})
	t.Run("MarkRedeemedUnknownIsNotFound", func(t *testing.T) {
		h.parallel(t)
		s, id := h.New(t), h.clusterID(t)
		_, err := s.MarkRedeemed(t.Context(), id, newRedemption(t))
		require.ErrorIs(t, err, nonce.ErrNotFound)
	})
	t.Run("MarkRedeemedRecordsOnce", func(t *testing.T) {
		h.parallel(t)
		s, id := h.New(t), h.clusterID(t)
		want := newEntry(t)
		require.NoError(t, s.Put(t.Context(), id, want))
		first, second := newRedemption(t), newRedemption(t)
		second.At = first.At.Add(time.Minute)

		got, err := s.MarkRedeemed(t.Context(), id, first)
		require.NoError(t, err)
		requireSameEntry(t, want, got)
		requireRedemption(t, first, got)

		got, err = s.MarkRedeemed(t.Context(), id, second)
		require.NoError(t, err)
		requireSameEntry(t, want, got)
		requireRedemption(t, first, got)

		got, err = s.Get(t.Context(), id)
		require.NoError(t, err)
		requireSameEntry(t, want, got)
		requireRedemption(t, first, got)

		fresh := newEntry(t)
		require.NoError(t, s.Put(t.Context(), id, fresh))
		got, err = s.Get(t.Context(), id)
		require.NoError(t, err)
		requireSameEntry(t, fresh, got)
		require.Nil(t, got.Redemption, "Put replaces a redeemed entry")
	})
	t.Run("ConcurrentMarkRedeemedRecordsOne", func(t *testing.T) {
		h.parallel(t)
		s, id := h.New(t), h.clusterID(t)
		want := newEntry(t)
		require.NoError(t, s.Put(t.Context(), id, want))

		var (
			start   = make(chan struct{})
			wg      sync.WaitGroup
			entries [ConcurrentConsumers]nonce.Entry
			errs    [ConcurrentConsumers]error
		)
		for i := range ConcurrentConsumers {
			r := newRedemption(t)
			wg.Go(func() {
				<-start
				entries[i], errs[i] = s.MarkRedeemed(t.Context(), id, r)
			})
		}
		close(start)
		wg.Wait()

		stored, err := s.Get(t.Context(), id)
		require.NoError(t, err)
		require.NotNil(t, stored.Redemption)
		for i, err := range errs {
			require.NoError(t, err, "MarkRedeemed %d", i)
			requireSameEntry(t, want, entries[i])
			requireRedemption(t, *stored.Redemption, entries[i])
		}
	})
	t.Run("ClusterIDsAreIndependent", func(t *testing.T) {
		h.parallel(t)
		s := h.New(t)
		a, b := h.clusterID(t), h.clusterID(t)
		ea, eb := newEntry(t), newEntry(t)
		require.NoError(t, s.Put(t.Context(), a, ea))
		require.NoError(t, s.Put(t.Context(), b, eb))

		got, err := s.Get(t.Context(), a)
		require.NoError(t, err)
		requireSameEntry(t, ea, got)
		got, err = s.Consume(t.Context(), b)
		require.NoError(t, err)
		requireSameEntry(t, eb, got)

		got, err = s.Get(t.Context(), a)
		require.NoError(t, err, "consuming one cluster's nonce removed another's")
		requireSameEntry(t, ea, got)
	})
	t.Run("ConcurrentConsumeHandsOutOnce", func(t *testing.T) {
		h.parallel(t)
		s, id := h.New(t), h.clusterID(t)
		want := newEntry(t)
		require.NoError(t, s.Put(t.Context(), id, want))

		var (
			start   = make(chan struct{})
			wg      sync.WaitGroup
			entries [ConcurrentConsumers]nonce.Entry
			errs    [ConcurrentConsumers]error
		)
		for i := range ConcurrentConsumers {
			wg.Go(func() {
				<-start
				entries[i], errs[i] = s.Consume(t.Context(), id)
			})
		}
		close(start)
		wg.Wait()

		winners := 0
		for i, err := range errs {
			switch {
			case err == nil:
				winners++
				requireSameEntry(t, want, entries[i])
			case !errors.Is(err, nonce.ErrNotFound):
				t.Errorf("Consume %d: got %v, want nil or an error wrapping nonce.ErrNotFound", i, err)
			}
		}
		require.Equal(t, 1, winners, "Consumes that got the nonce")
	})
	t.Run("CancelledContext", func(t *testing.T) {
		h.parallel(t)
		s, id := h.New(t), h.clusterID(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		e := newEntry(t)
		calls := []struct {
			name string
			call func() error
		}{
			{"Put", func() error { return s.Put(ctx, id, e) }},
			{"Get", func() error { _, err := s.Get(ctx, id); return err }},
			{"Consume", func() error { _, err := s.Consume(ctx, id); return err }},
			{"MarkRedeemed", func() error { _, err := s.MarkRedeemed(ctx, id, newRedemption(t)); return err }},
		}
		for _, c := range calls {
			require.ErrorIs(t, c.call(), context.Canceled, c.name)
		}
	})
}

func (h Harness) parallel(t *testing.T) {
	if h.Parallel {
		t.Parallel()
	}
}

// clusterID returns a cluster ID no other test uses, prepared by the harness.
func (h Harness) clusterID(t *testing.T) string {
	t.Helper()
	id := uniqueID(t)
	if h.Prepare != nil {
		h.Prepare(t, id)
	}
	return id
}

// uniqueID returns a DNS-1123 label of 19 characters: a hash of the test's
// name, for finding its objects, and random bytes, so that runs against the
// same API server do not collide.
func uniqueID(t *testing.T) string {
	sum := sha256.Sum256([]byte(t.Name()))
	var r [4]byte
	_, _ = rand.Read(r[:])
	return "kpt-" + hex.EncodeToString(sum[:3]) + "-" + hex.EncodeToString(r[:])
}

// newEntry returns a fresh nonce issued at a time with a fractional second,
// for a TTL that is not a whole number of seconds.
func newEntry(t *testing.T) nonce.Entry {
	t.Helper()
	n, err := nonce.Generate(nil)
	require.NoError(t, err)
	return nonce.Entry{Nonce: n, IssuedAt: time.Now().Round(0).Add(-time.Minute), TTL: 10*time.Minute + 7*time.Millisecond}
}

// newRedemption returns a redemption by a random digest, at a time with a
// fractional second.
func newRedemption(t *testing.T) nonce.Redemption {
	t.Helper()
	by := make([]byte, sha256.Size)
	_, err := rand.Read(by)
	require.NoError(t, err)
	return nonce.Redemption{By: by, Key: "SHA256:" + hex.EncodeToString(by[:8]), At: time.Now().Round(0)}
}

// requireRedemption checks that got records want: the same digest, at a
// time within a second of want's.
func requireRedemption(t *testing.T, want nonce.Redemption, got nonce.Entry) {
	t.Helper()
	require.NotNil(t, got.Redemption, "no redemption recorded")
	require.Equal(t, want.By, got.Redemption.By)
	require.Equal(t, want.Key, got.Redemption.Key)
	d := got.Redemption.At.Sub(want.At).Abs()
	require.Less(t, d, time.Second, "redeemed at %s, want %s", got.Redemption.At, want.At)
}

// requireSameEntry checks got against want: the same nonce, issued within a
// second of want's time, for the same TTL.
func requireSameEntry(t *testing.T, want, got nonce.Entry) {
	t.Helper()
	require.True(t, want.Nonce.Equal(got.Nonce), "got %v, want %v", got.Nonce, want.Nonce)
	require.Equal(t, want.TTL, got.TTL, "TTL")
	d := got.IssuedAt.Sub(want.IssuedAt).Abs()
	require.Less(t, d, time.Second, "IssuedAt %s, want %s", got.IssuedAt, want.IssuedAt)
}
