package fake

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/kubepact/kubepact/keys"
)

var _ keys.Keyring = (*Keyring)(nil)

// Keyring is an in-memory keys.Keyring.
type Keyring struct {
	mu   sync.Mutex
	keys map[string]keys.Stored
}

// Get returns what is stored as name.
func (r *Keyring) Get(ctx context.Context, name string) (keys.Stored, error) {
	if err := ctx.Err(); err != nil {
		return keys.Stored{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.keys[name]
	if !ok {
		return keys.Stored{}, fmt.Errorf("%w: %s", keys.ErrNotFound, name)
	}
	return s, nil
}

// Create stores s as name unless a key of that name exists.
func (r *Keyring) Create(ctx context.Context, name string, s keys.Stored) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.keys[name]; ok {
		return fmt.Errorf("%w: %s", keys.ErrExists, name)
	}
	if r.keys == nil {
		r.keys = map[string]keys.Stored{}
	}
	r.keys[name] = keys.Stored{Key: s.Key, Attestation: slices.Clone(s.Attestation)}
	return nil
}

// Attest sets the attestation of the key stored as name, which must be
// s.Key.
func (r *Keyring) Attest(ctx context.Context, name string, s keys.Stored) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	held, ok := r.keys[name]
	switch {
	case !ok:
		return fmt.Errorf("%w: %s", keys.ErrNotFound, name)
	case s.Key == nil || !keys.Equal(held.Key.Public(), s.Key.Public()):
		return fmt.Errorf("%w: %s holds another key", keys.ErrExists, name)
	}
	held.Attestation = slices.Clone(s.Attestation)
	r.keys[name] = held
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

// String counts the keys; it never prints them. fmt does not call the
// formatting methods of unexported fields, so the fakes holding keys format
// themselves.
func (r *Keyring) String() string { return fmt.Sprintf("fake.Keyring(%d keys)", r.Len()) }

// GoString is String.
func (r *Keyring) GoString() string { return r.String() }

// Format makes every fmt verb print String.
func (r *Keyring) Format(f fmt.State, _ rune) { io.WriteString(f, r.String()) }

// String tells whether a key is stored; it never prints it.
func (s *KeyStore) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("fake.KeyStore(%v)", s.key)
}

// GoString is String.
func (s *KeyStore) GoString() string { return s.String() }

// Format makes every fmt verb print String.
func (s *KeyStore) Format(f fmt.State, _ rune) { io.WriteString(f, s.String()) }
