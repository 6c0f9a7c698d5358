package keys

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
)

// The cluster key rotates in two steps, each an explicit act of the
// cluster's administrator: a next key is made beside the key (EnsureNext)
// and published, for providers to commit and for the consumer's enrolment
// requests to hand the key over to (package enrol); then it is promoted
// (RotatingStore.Promote), and the replaced key's public half is kept as
// the previous key, whose attestations (Attester) still count until they
// are made again with the new key.
const (
	// NextSecretName is the Secret of the next cluster key while a
	// rotation overlaps, laid out as SecretName. Its name is one of the
	// keyring's prefix, so the policy that guards the keyring's Secrets
	// guards it too; no keyring name starts with "cluster-".
	NextSecretName = KeyringSecretPrefix + "cluster-next"
	// PreviousPublicKeySecretKey is the data key of the cluster key
	// Secret that keeps, after a promotion, the public half of the key it
	// replaced (PKIX PEM).
	PreviousPublicKeySecretKey = "previousPublicKey"
)

// A RotatingStore is a Store through which the cluster key can rotate.
//
// GetWithPrevious returns the key, as Get does, and the previous key's
// public half, nil when the key replaced none, from one read. Next returns
// the next key, nil and nil when no rotation overlaps. CreateNext stores k
// as the next key unless one is stored (an error wrapping ErrExists).
// Promote makes the next key the key in one write, keeping the replaced
// key's public half as the previous key, then forgets the next key; it
// returns the key. Each step is safe to stop after and to run again:
// Promote with a next key that is the key already only forgets the next
// key, and without a next key returns an error wrapping ErrNotFound.
type RotatingStore interface {
	Store
	GetWithPrevious(ctx context.Context) (k *PrivateKey, previous crypto.PublicKey, err error)
	Next(ctx context.Context) (*PrivateKey, error)
	CreateNext(ctx context.Context, k *PrivateKey) error
	Promote(ctx context.Context) (*PrivateKey, error)
}

// EnsureNext returns the next key s holds, generating and storing one of
// algorithm alg (randomness from r) when it holds none: the first step of
// a rotation. There must be a key to rotate: without one, the error wraps
// ErrNotFound.
func EnsureNext(ctx context.Context, s RotatingStore, r io.Reader, alg Algorithm) (*PrivateKey, error) {
	if _, err := s.Get(ctx); err != nil {
		return nil, fmt.Errorf("reading the cluster key to rotate: %w", err)
	}
	next, err := s.Next(ctx)
	if err != nil || next != nil {
		return next, err
	}
	if next, err = Generate(r, alg); err != nil {
		return nil, err
	}
	switch err := s.CreateNext(ctx, next); {
	case err == nil:
		return next, nil
	case errors.Is(err, ErrExists):
		return s.Next(ctx)
	default:
		return nil, fmt.Errorf("storing the next cluster key: %w", err)
	}
}

// NextSecret returns the Secret that holds k as the next cluster key in
// namespace. Its data is secret.
func NextSecret(namespace string, k *PrivateKey) (*corev1.Secret, error) {
	return namedSecret(namespace, NextSecretName, k)
}

// PreviousFromSecret returns the previous key a cluster key Secret keeps
// (PreviousPublicKeySecretKey), nil when it keeps none.
func PreviousFromSecret(s *corev1.Secret) (crypto.PublicKey, error) {
	raw, ok := s.Data[PreviousPublicKeySecretKey]
	if !ok {
		return nil, nil
	}
	pub, err := ParsePublicKey(raw)
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: %s: %w", s.Namespace, s.Name, PreviousPublicKeySecretKey, err)
	}
	return pub, nil
}
