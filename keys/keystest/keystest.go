// Package keystest is the conformance suite of keys.Store.
//
// Run checks the contract written on keys.Store:
//
//   - Get of an empty Store fails with an error wrapping keys.ErrNotFound;
//   - Get returns the key Create stored, private half included, for every
//     keys.Algorithm (RSA with one key only: it is slow to generate);
//   - Create on a Store that holds a key fails with an error wrapping
//     keys.ErrExists and keeps the first key;
//   - of concurrent Creates exactly one succeeds, the others fail with
//     ErrExists, and Get returns the winner's key;
//   - a call with a cancelled context fails with an error wrapping
//     context.Canceled.
//
// A Store holds one cluster's key, so every test asks Harness.New for an
// empty Store; against a real API server, give each one its own namespace.
//
// # Usage
//
// From the test of an adapter over a real API server (sketch):
//
//	func TestKeyStoreConformance(t *testing.T) {
//		client := kubernetes.NewForConfigOrDie(testcluster.StartT(t).AdminConfig())
//		var n atomic.Int64
//		keystest.Run(t, keystest.Harness{
//			New: func(t *testing.T) keys.Store {
//				// A namespace no other test uses: the Store is empty.
//				ns := fmt.Sprintf("keys-%d-%d", time.Now().UnixNano(), n.Add(1))
//				return kube.NewKeyStore(client, ns)
//			},
//			Parallel: true,
//		})
//	}
package keystest

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/keys"
)

// Harness tells Run how to use the Store under test.
type Harness struct {
	// New returns an empty Store, one that holds no key, not shared with
	// any other call. Required.
	New func(t *testing.T) keys.Store
	// Parallel lets the suite's tests run in parallel with each other.
	Parallel bool
}

// ConcurrentCreators is how many goroutines race to Create a key.
const ConcurrentCreators = 10

// Run checks that the Stores made by h.New meet the keys.Store contract.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("keystest: Harness.New is required")
	}
	t.Run("GetEmptyIsNotFound", func(t *testing.T) {
		h.parallel(t)
		_, err := h.New(t).Get(t.Context())
		require.ErrorIs(t, err, keys.ErrNotFound)
	})
	t.Run("GetReturnsCreatedKey", func(t *testing.T) {
		h.parallel(t)
		for _, alg := range []keys.Algorithm{keys.Ed25519, keys.ECDSAP256, keys.ECDSAP384, keys.RSA2048} {
			t.Run(alg.String(), func(t *testing.T) {
				h.parallel(t)
				s, want := h.New(t), generate(t, alg)
				require.NoError(t, s.Create(t.Context(), want))
				got, err := s.Get(t.Context())
				require.NoError(t, err)
				requireSameKey(t, want, got)
			})
		}
	})
	t.Run("CreateTwiceIsExistsAndKeepsFirst", func(t *testing.T) {
		h.parallel(t)
		s := h.New(t)
		first, second := generate(t, keys.Ed25519), generate(t, keys.Ed25519)
		require.NoError(t, s.Create(t.Context(), first))
		require.ErrorIs(t, s.Create(t.Context(), second), keys.ErrExists)
		got, err := s.Get(t.Context())
		require.NoError(t, err)
		requireSameKey(t, first, got)
	})
	t.Run("ConcurrentCreateAgreesOnOne", func(t *testing.T) {
		h.parallel(t)
		s := h.New(t)
		var (
			start = make(chan struct{})
			wg    sync.WaitGroup
			ks    [ConcurrentCreators]*keys.PrivateKey
			errs  [ConcurrentCreators]error
		)
		for i := range ks {
			ks[i] = generate(t, keys.Ed25519)
		}
		for i := range ks {
			wg.Go(func() {
				<-start
				errs[i] = s.Create(t.Context(), ks[i])
			})
		}
		close(start)
		wg.Wait()

		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Errorf("Create %d and Create %d both succeeded", winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, keys.ErrExists):
				t.Errorf("Create %d: got %v, want nil or an error wrapping keys.ErrExists", i, err)
			}
		}
		require.GreaterOrEqual(t, winner, 0, "no Create succeeded")
		got, err := s.Get(t.Context())
		require.NoError(t, err)
		requireSameKey(t, ks[winner], got)
	})
	t.Run("CancelledContext", func(t *testing.T) {
		h.parallel(t)
		s, k := h.New(t), generate(t, keys.Ed25519)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := s.Get(ctx)
		require.ErrorIs(t, err, context.Canceled, "Get")
		require.ErrorIs(t, s.Create(ctx, k), context.Canceled, "Create")
	})
}

func (h Harness) parallel(t *testing.T) {
	if h.Parallel {
		t.Parallel()
	}
}

func generate(t *testing.T, alg keys.Algorithm) *keys.PrivateKey {
	t.Helper()
	k, err := keys.Generate(nil, alg)
	require.NoError(t, err)
	return k
}

// requireSameKey checks that got is want: same algorithm, same public key,
// and a private half whose signatures verify under want's public key.
func requireSameKey(t *testing.T, want, got *keys.PrivateKey) {
	t.Helper()
	require.NotNil(t, got)
	require.Equal(t, want.Algorithm(), got.Algorithm())
	require.True(t, keys.Equal(want.Public(), got.Public()), "got %v, want %v", got, want)
	msg := []byte("kubepact keystest")
	sig, err := keys.SignMessage(nil, got, msg)
	require.NoError(t, err)
	require.NoError(t, keys.VerifyMessage(want.Public(), msg, sig), "the stored private key does not match")
}
