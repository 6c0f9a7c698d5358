package keys_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/internal/testkeys"
	"github.com/kubepact/kubepact/keys"
)

// memStore is a keys.Store held in memory. Hooks, when set, replace the
// behaviour of a call so a test can inject a race or a failure.
type memStore struct {
	mu      sync.Mutex
	key     *keys.PrivateKey
	gets    int
	creates int

	// onGet is called with the number of the Get call (from 1).
	onGet func(n int) (*keys.PrivateKey, error)
	// onCreate replaces Create.
	onCreate func(s *memStore, k *keys.PrivateKey) error
}

func (s *memStore) Get(context.Context) (*keys.PrivateKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets++
	if s.onGet != nil {
		return s.onGet(s.gets)
	}
	if s.key == nil {
		return nil, keys.ErrNotFound
	}
	return s.key, nil
}

func (s *memStore) Create(_ context.Context, k *keys.PrivateKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.creates++
	if s.onCreate != nil {
		return s.onCreate(s, k)
	}
	if s.key != nil {
		return keys.ErrExists
	}
	s.key = k
	return nil
}

func TestEnsureGeneratesWhenEmpty(t *testing.T) {
	t.Parallel()
	for _, alg := range []keys.Algorithm{keys.Ed25519, keys.ECDSAP256} {
		t.Run(alg.String(), func(t *testing.T) {
			t.Parallel()
			s := &memStore{}
			k, err := keys.Ensure(t.Context(), s, nil, alg)
			require.NoError(t, err)
			require.Equal(t, alg, k.Algorithm())
			require.Same(t, k, s.key)
			require.Equal(t, 1, s.creates)

			again, err := keys.Ensure(t.Context(), s, nil, alg)
			require.NoError(t, err)
			require.Same(t, k, again)
			require.Equal(t, 1, s.creates, "a stored key is not replaced")
		})
	}
}

func TestEnsureDrawsFromReader(t *testing.T) {
	t.Parallel()
	k, err := keys.Ensure(t.Context(), &memStore{}, seeded(9), keys.Ed25519)
	require.NoError(t, err)
	want, err := keys.Generate(seeded(9), keys.Ed25519)
	require.NoError(t, err)
	require.True(t, keys.Equal(want.Public(), k.Public()))
}

func TestEnsureReturnsStoredKey(t *testing.T) {
	t.Parallel()
	stored := testkeys.Generate(t, keys.Ed25519)
	s := &memStore{key: stored}
	// The stored key wins even when another algorithm is asked for.
	k, err := keys.Ensure(t.Context(), s, nil, keys.ECDSAP256)
	require.NoError(t, err)
	require.Same(t, stored, k)
	require.Zero(t, s.creates)
}

func TestEnsureLosesRace(t *testing.T) {
	t.Parallel()
	winner := testkeys.Generate(t, keys.Ed25519)
	s := &memStore{}
	s.onGet = func(n int) (*keys.PrivateKey, error) {
		if n == 1 {
			return nil, keys.ErrNotFound
		}
		return winner, nil
	}
	s.onCreate = func(*memStore, *keys.PrivateKey) error {
		return keys.ErrExists // another caller stored winner first
	}

	k, err := keys.Ensure(t.Context(), s, nil, keys.Ed25519)
	require.NoError(t, err)
	require.Same(t, winner, k)
	require.Equal(t, 2, s.gets)
	require.Equal(t, 1, s.creates)
}

func TestEnsureErrors(t *testing.T) {
	t.Parallel()
	errStore := errors.New("store unavailable")
	tests := []struct {
		name        string
		alg         keys.Algorithm
		onGet       func(n int) (*keys.PrivateKey, error)
		onCreate    func(*memStore, *keys.PrivateKey) error
		want        error
		wantCreates int
	}{
		{
			name:  "Get fails",
			alg:   keys.Ed25519,
			onGet: func(int) (*keys.PrivateKey, error) { return nil, errStore },
			want:  errStore,
		},
		{
			name:        "Create fails",
			alg:         keys.Ed25519,
			onCreate:    func(*memStore, *keys.PrivateKey) error { return errStore },
			want:        errStore,
			wantCreates: 1,
		},
		{
			name: "re-read after ErrExists fails",
			alg:  keys.Ed25519,
			onGet: func(n int) (*keys.PrivateKey, error) {
				if n == 1 {
					return nil, keys.ErrNotFound
				}
				return nil, errStore
			},
			onCreate:    func(*memStore, *keys.PrivateKey) error { return keys.ErrExists },
			want:        errStore,
			wantCreates: 1,
		},
		{
			name: "unknown algorithm",
			alg:  keys.Algorithm(42),
			want: keys.ErrUnsupported,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &memStore{onGet: tt.onGet, onCreate: tt.onCreate}
			k, err := keys.Ensure(t.Context(), s, nil, tt.alg)
			require.ErrorIs(t, err, tt.want)
			require.Nil(t, k)
			require.Equal(t, tt.wantCreates, s.creates)
		})
	}
}

func TestEnsureConcurrentCallersAgree(t *testing.T) {
	t.Parallel()
	s := &memStore{}
	const callers = 20
	got := make([]*keys.PrivateKey, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			k, err := keys.Ensure(t.Context(), s, nil, keys.Ed25519)
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = k
		})
	}
	wg.Wait()
	for _, k := range got {
		require.Same(t, s.key, k)
	}
}
