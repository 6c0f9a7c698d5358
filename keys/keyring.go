package keys

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// Keyring keeps named private keys: the TLS keys of a consumer's identities
// when they are not the cluster key.
//
// Get returns the key stored under name, or an error wrapping ErrNotFound.
// Create stores k under name only when no key is stored there yet, and
// returns an error wrapping ErrExists otherwise. Delete removes the key and
// succeeds when there is none. Implementations are safe for concurrent use.
type Keyring interface {
	Get(ctx context.Context, name string) (*PrivateKey, error)
	Create(ctx context.Context, name string, k *PrivateKey) error
	Delete(ctx context.Context, name string) error
}

// EnsureIn returns the key stored under name in r, generating and storing
// one of algorithm alg (randomness from rnd) when there is none. The key is
// stored before EnsureIn returns it, so a caller that crashes after using it
// finds the same key on its next run.
func EnsureIn(ctx context.Context, r Keyring, name string, rnd io.Reader, alg Algorithm) (*PrivateKey, error) {
	k, err := r.Get(ctx, name)
	if err == nil {
		return k, nil
	}
	if !errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("reading key %s: %w", name, err)
	}
	if k, err = Generate(rnd, alg); err != nil {
		return nil, err
	}
	switch err := r.Create(ctx, name, k); {
	case err == nil:
		return k, nil
	case errors.Is(err, ErrExists):
		return r.Get(ctx, name)
	default:
		return nil, fmt.Errorf("storing key %s: %w", name, err)
	}
}
