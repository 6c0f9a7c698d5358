package fake

import (
	"context"
	"fmt"
	"io"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubepact/kubepact/authtoken"
)

var (
	_ authtoken.Store   = (*TokenStore)(nil)
	_ authtoken.Secrets = (*Secrets)(nil)
)

// TokenStore is an in-memory authtoken.Store.
type TokenStore struct {
	mu     sync.Mutex
	token  authtoken.Token
	writes int
}

// Get returns the stored token.
func (s *TokenStore) Get(ctx context.Context) (authtoken.Token, error) {
	if err := ctx.Err(); err != nil {
		return authtoken.Token{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token.IsZero() {
		return authtoken.Token{}, fmt.Errorf("%w: Secret %s", authtoken.ErrNotFound, authtoken.SecretName)
	}
	return s.token, nil
}

// Create stores t unless a token is stored.
func (s *TokenStore) Create(ctx context.Context, t authtoken.Token) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.token.IsZero() {
		return fmt.Errorf("%w: Secret %s", authtoken.ErrExists, authtoken.SecretName)
	}
	s.token = t
	s.writes++
	return nil
}

// Replace stores t.
func (s *TokenStore) Replace(ctx context.Context, t authtoken.Token) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = t
	s.writes++
	return nil
}

// Writes returns the number of Creates and Replaces that stored a token.
func (s *TokenStore) Writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}

// String never prints the token.
func (s *TokenStore) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("fake.TokenStore(%v)", s.token)
}

// GoString is String.
func (s *TokenStore) GoString() string { return s.String() }

// Format makes every fmt verb print String.
func (s *TokenStore) Format(f fmt.State, _ rune) { io.WriteString(f, s.String()) }

// Secrets is an in-memory authtoken.Secrets. Like SecretWriter, Apply keeps
// the labels, annotations and owner references others set.
type Secrets struct{ objects[*corev1.Secret] }

// Get returns the Secret namespace/name.
func (s *Secrets) Get(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sec, ok := s.get(namespace, name)
	if !ok {
		return nil, fmt.Errorf("%w: Secret %s/%s", authtoken.ErrNotFound, namespace, name)
	}
	return sec, nil
}

// Apply creates sec or brings the stored Secret up to it.
func (s *Secrets) Apply(ctx context.Context, sec *corev1.Secret) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.applyOwned(sec, nil)
	return nil
}

// String counts the Secrets; it never prints them.
func (s *Secrets) String() string { return fmt.Sprintf("fake.Secrets(%d writes)", s.Writes()) }

// GoString is String.
func (s *Secrets) GoString() string { return s.String() }

// Format makes every fmt verb print String.
func (s *Secrets) Format(f fmt.State, _ rune) { io.WriteString(f, s.String()) }
