package fake

import (
	"context"
	"fmt"
	"sync"

	"github.com/kubepact/kubepact/keys"
)

var _ keys.Keyring = (*Keyring)(nil)

// Keyring is an in-memory keys.Keyring.
type Keyring struct {
	mu   sync.Mutex
	keys map[string]*keys.PrivateKey
}

// Get returns the key named name.
func (r *Keyring) Get(ctx context.Context, name string) (*keys.PrivateKey, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k, ok := r.keys[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s", keys.ErrNotFound, name)
	}
	return k, nil
}

// Create stores k as name unless a key of that name exists.
func (r *Keyring) Create(ctx context.Context, name string, k *keys.PrivateKey) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.keys[name]; ok {
		return fmt.Errorf("%w: %s", keys.ErrExists, name)
	}
	if r.keys == nil {
		r.keys = map[string]*keys.PrivateKey{}
	}
	r.keys[name] = k
	return nil
}

// Delete removes the key named name.
func (r *Keyring) Delete(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.keys, name)
	return nil
}

// Len returns the number of stored keys.
func (r *Keyring) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.keys)
}
