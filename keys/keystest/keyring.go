package keystest

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/keys"
)

// KeyringHarness tells RunKeyring how to use the Keyring under test.
type KeyringHarness struct {
	// New returns an empty Keyring, not shared with any other call.
	// Required.
	New func(t *testing.T) keys.Keyring
	// Parallel lets the suite's tests run in parallel with each other.
	Parallel bool
}

// RunKeyring checks that the Keyrings made by h.New meet the keys.Keyring
// contract:
//
//   - Get of a name never stored fails with an error wrapping
//     keys.ErrNotFound;
//   - Get returns what Create stored: the key, private half included, and
//     its attestation, byte for byte (none stays none);
//   - Create under a name taken fails with an error wrapping keys.ErrExists
//     and keeps the first key and attestation; of concurrent Creates
//     exactly one succeeds;
//   - Attest replaces the attestation of the key stored, and only when it
//     is that key: another key wraps keys.ErrExists and changes nothing, a
//     name never stored wraps keys.ErrNotFound;
//   - Delete removes one name and no other, and succeeds when there is
//     nothing to delete.
func RunKeyring(t *testing.T, h KeyringHarness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("keystest: KeyringHarness.New is required")
	}
	parallel := func(t *testing.T) {
		if h.Parallel {
			t.Parallel()
		}
	}
	requireStored := func(t *testing.T, want, got keys.Stored) {
		t.Helper()
		requireSameKey(t, want.Key, got.Key)
		require.True(t, bytes.Equal(want.Attestation, got.Attestation), "attestation %x, want %x", got.Attestation, want.Attestation)
	}
	t.Run("GetNeverStoredIsNotFound", func(t *testing.T) {
		parallel(t)
		_, err := h.New(t).Get(t.Context(), "controlplane-cl-a")
		require.ErrorIs(t, err, keys.ErrNotFound)
	})
	t.Run("GetReturnsCreated", func(t *testing.T) {
		parallel(t)
		r := h.New(t)
		attested := keys.Stored{Key: generate(t, keys.Ed25519), Attestation: []byte("attestation-1")}
		bare := keys.Stored{Key: generate(t, keys.ECDSAP256)}
		require.NoError(t, r.Create(t.Context(), "controlplane-cl-a", attested))
		require.NoError(t, r.Create(t.Context(), "controlplane-cl-b", bare))
		got, err := r.Get(t.Context(), "controlplane-cl-a")
		require.NoError(t, err)
		requireStored(t, attested, got)
		got, err = r.Get(t.Context(), "controlplane-cl-b")
		require.NoError(t, err)
		requireStored(t, bare, got)
	})
	t.Run("CreateTakenKeepsFirst", func(t *testing.T) {
		parallel(t)
		r := h.New(t)
		first := keys.Stored{Key: generate(t, keys.Ed25519), Attestation: []byte("first")}
		require.NoError(t, r.Create(t.Context(), "n", first))
		err := r.Create(t.Context(), "n", keys.Stored{Key: generate(t, keys.Ed25519), Attestation: []byte("second")})
		require.ErrorIs(t, err, keys.ErrExists)
		got, err := r.Get(t.Context(), "n")
		require.NoError(t, err)
		requireStored(t, first, got)
	})
	t.Run("ConcurrentCreatesAgree", func(t *testing.T) {
		parallel(t)
		r := h.New(t)
		var (
			wg  sync.WaitGroup
			mu  sync.Mutex
			won []keys.Stored
		)
		for range ConcurrentCreators {
			s := keys.Stored{Key: generate(t, keys.Ed25519)}
			wg.Go(func() {
				if err := r.Create(context.Background(), "n", s); err == nil {
					mu.Lock()
					won = append(won, s)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		require.Len(t, won, 1)
		got, err := r.Get(t.Context(), "n")
		require.NoError(t, err)
		requireStored(t, won[0], got)
	})
	t.Run("AttestOnlyTheKeyStored", func(t *testing.T) {
		parallel(t)
		r := h.New(t)
		held := keys.Stored{Key: generate(t, keys.Ed25519)}
		require.ErrorIs(t, r.Attest(t.Context(), "n", keys.Stored{Key: held.Key, Attestation: []byte("a")}), keys.ErrNotFound)
		require.NoError(t, r.Create(t.Context(), "n", held))
		err := r.Attest(t.Context(), "n", keys.Stored{Key: generate(t, keys.Ed25519), Attestation: []byte("other")})
		require.ErrorIs(t, err, keys.ErrExists)
		got, err := r.Get(t.Context(), "n")
		require.NoError(t, err)
		requireStored(t, held, got)

		attested := keys.Stored{Key: held.Key, Attestation: []byte("attested")}
		require.NoError(t, r.Attest(t.Context(), "n", attested))
		got, err = r.Get(t.Context(), "n")
		require.NoError(t, err)
		requireStored(t, attested, got)
	})
	t.Run("DeleteOneName", func(t *testing.T) {
		parallel(t)
		r := h.New(t)
		require.NoError(t, r.Delete(t.Context(), "never"))
		kept := keys.Stored{Key: generate(t, keys.Ed25519), Attestation: []byte("kept")}
		require.NoError(t, r.Create(t.Context(), "a", keys.Stored{Key: generate(t, keys.Ed25519)}))
		require.NoError(t, r.Create(t.Context(), "b", kept))
		require.NoError(t, r.Delete(t.Context(), "a"))
		_, err := r.Get(t.Context(), "a")
		require.ErrorIs(t, err, keys.ErrNotFound)
		got, err := r.Get(t.Context(), "b")
		require.NoError(t, err)
		requireStored(t, kept, got)
	})
}
