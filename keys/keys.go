// Package keys generates, encodes and parses the long-term cluster keys that
// sign handshakes.
//
// A cluster key is Ed25519 by default. ECDSA P-256 and RSA-2048 exist for
// peers behind TLS terminators that refuse Ed25519 client certificates. Private
// keys are encoded as PKCS#8 PEM ("PRIVATE KEY"), public keys as PKIX PEM
// ("PUBLIC KEY"); ParsePublicKey also accepts the raw 32-byte Ed25519 form
// that Liqo consumers before v1.0.2 send.
//
// # Security
//
// A PrivateKey can only be built by Generate or ParsePrivateKey. It implements
// crypto.Signer, and its String, GoString and Format methods print the
// algorithm and a fingerprint of the public key, never the private key. The
// only way to get the secret bytes out is MarshalPrivateKey.
//
// # Errors
//
// Parsing returns errors wrapping ErrMalformed; keys of an unsupported type
// or curve wrap ErrUnsupported, and RSA keys shorter than 2048 bits wrap
// ErrWeak.
package keys

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
)

// Algorithm is the type of a cluster key.
type Algorithm int

const (
	// Ed25519 is the default algorithm.
	Ed25519 Algorithm = iota
	// ECDSAP256 is ECDSA over NIST P-256.
	ECDSAP256
	// RSA2048 is RSA with a 2048-bit modulus ("TLS compatibility mode").
	RSA2048
)

func (a Algorithm) String() string {
	switch a {
	case Ed25519:
		return "Ed25519"
	case ECDSAP256:
		return "ECDSA-P256"
	case RSA2048:
		return "RSA-2048"
	}
	return fmt.Sprintf("Algorithm(%d)", int(a))
}

// MinRSABits is the shortest RSA modulus accepted anywhere in kubepact.
const MinRSABits = 2048

// MaxPEMSize bounds the encoded size of a key accepted by the parsers.
const MaxPEMSize = 16 << 10

var (
	// ErrMalformed reports bytes that do not encode a key.
	ErrMalformed = errors.New("malformed key")
	// ErrUnsupported reports a key type or curve kubepact does not accept.
	ErrUnsupported = errors.New("unsupported key type")
	// ErrWeak reports an RSA key shorter than MinRSABits.
	ErrWeak = errors.New("key too weak")
	// ErrNotFound reports that a Store holds no key.
	ErrNotFound = errors.New("cluster key not found")
	// ErrExists reports that a Store already holds a key.
	ErrExists = errors.New("cluster key already exists")
)

const (
	pemPrivateKey = "PRIVATE KEY"
	pemPublicKey  = "PUBLIC KEY"
)

// PrivateKey is a cluster's private key. The zero value is not usable.
type PrivateKey struct {
	signer crypto.Signer
	alg    Algorithm
}

var _ crypto.Signer = (*PrivateKey)(nil)

// Generate returns a new key of the given algorithm, drawing randomness from
// r (crypto/rand.Reader when nil).
func Generate(r io.Reader, alg Algorithm) (*PrivateKey, error) {
	if r == nil {
		r = rand.Reader
	}
	var (
		s   crypto.Signer
		err error
	)
	switch alg {
	case Ed25519:
		_, s, err = ed25519.GenerateKey(r)
	case ECDSAP256:
		s, err = ecdsa.GenerateKey(elliptic.P256(), r)
	case RSA2048:
		s, err = rsa.GenerateKey(r, 2048)
	default:
		return nil, fmt.Errorf("%w: %v", ErrUnsupported, alg)
	}
	if err != nil {
		return nil, fmt.Errorf("generating %v key: %w", alg, err)
	}
	return &PrivateKey{signer: s, alg: alg}, nil
}

// ParsePrivateKey parses a PKCS#8 PEM private key.
func ParsePrivateKey(pemBytes []byte) (*PrivateKey, error) {
	if len(pemBytes) > MaxPEMSize {
		return nil, fmt.Errorf("%w: %d bytes exceeds %d", ErrMalformed, len(pemBytes), MaxPEMSize)
	}
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != pemPrivateKey {
		return nil, fmt.Errorf("%w: no %q PEM block", ErrMalformed, pemPrivateKey)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		// The parser's message never includes key material.
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%w: %T", ErrUnsupported, k)
	}
	alg, err := algorithmOf(s.Public())
	if err != nil {
		return nil, err
	}
	return &PrivateKey{signer: s, alg: alg}, nil
}

// MarshalPrivateKey encodes k as PKCS#8 PEM. The result is secret.
func MarshalPrivateKey(k *PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k.signer)
	if err != nil {
		return nil, fmt.Errorf("encoding %v private key: %w", k.alg, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPrivateKey, Bytes: der}), nil
}

// Public returns the public half of k.
func (k *PrivateKey) Public() crypto.PublicKey { return k.signer.Public() }

// Sign signs digest with k, as crypto.Signer does.
func (k *PrivateKey) Sign(r io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	return k.signer.Sign(r, digest, opts)
}

// Algorithm returns the type of k.
func (k *PrivateKey) Algorithm() Algorithm { return k.alg }

// String names the algorithm and the public key's fingerprint.
func (k *PrivateKey) String() string {
	if k == nil || k.signer == nil {
		return "keys.PrivateKey(<nil>)"
	}
	return fmt.Sprintf("keys.PrivateKey(%v, %s)", k.alg, Fingerprint(k.Public()))
}

// GoString is String: a private key never prints its secret.
func (k *PrivateKey) GoString() string { return k.String() }

// Format makes every fmt verb print String.
func (k *PrivateKey) Format(f fmt.State, _ rune) { io.WriteString(f, k.String()) }

// MarshalPublicKey encodes pub as PKIX PEM ("PUBLIC KEY").
func MarshalPublicKey(pub crypto.PublicKey) ([]byte, error) {
	if err := Check(pub); err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPublicKey, Bytes: der}), nil
}

// ParsePublicKey parses a PKIX PEM public key, or a raw 32-byte Ed25519 key,
// and checks that kubepact accepts it.
func ParsePublicKey(b []byte) (crypto.PublicKey, error) {
	if len(b) == ed25519.PublicKeySize && !bytes.HasPrefix(b, []byte("-----")) {
		return ed25519.PublicKey(bytes.Clone(b)), nil
	}
	if len(b) > MaxPEMSize {
		return nil, fmt.Errorf("%w: %d bytes exceeds %d", ErrMalformed, len(b), MaxPEMSize)
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != pemPublicKey {
		return nil, fmt.Errorf("%w: neither a %q PEM block nor a raw Ed25519 key", ErrMalformed, pemPublicKey)
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if err := Check(pub); err != nil {
		return nil, err
	}
	return pub, nil
}

// Check reports whether pub is of a type and size kubepact accepts: Ed25519,
// ECDSA on P-256 or P-384, or RSA of at least MinRSABits.
func Check(pub crypto.PublicKey) error {
	_, err := algorithmOf(pub)
	return err
}

func algorithmOf(pub crypto.PublicKey) (Algorithm, error) {
	switch k := pub.(type) {
	case ed25519.PublicKey:
		if len(k) != ed25519.PublicKeySize {
			return 0, fmt.Errorf("%w: Ed25519 key of %d bytes", ErrMalformed, len(k))
		}
		return Ed25519, nil
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() && k.Curve != elliptic.P384() {
			return 0, fmt.Errorf("%w: ECDSA curve %s", ErrUnsupported, k.Curve.Params().Name)
		}
		return ECDSAP256, nil
	case *rsa.PublicKey:
		if k.N.BitLen() < MinRSABits {
			return 0, fmt.Errorf("%w: RSA key of %d bits, want at least %d", ErrWeak, k.N.BitLen(), MinRSABits)
		}
		return RSA2048, nil
	}
	return 0, fmt.Errorf("%w: %T", ErrUnsupported, pub)
}

// Equal reports whether a and b are the same public key.
func Equal(a, b crypto.PublicKey) bool {
	ak, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ak.Equal(b)
}

// Fingerprint returns "SHA256:" and the unpadded base64 SHA-256 of the PKIX
// encoding of pub, the form ssh-keygen prints.
func Fingerprint(pub crypto.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "SHA256:?"
	}
	sum := sha256.Sum256(der)
	return "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:])
}

// Store keeps one cluster's private key.
//
// Get returns an error wrapping ErrNotFound when no key is stored. Create
// stores k only when no key is stored yet and returns an error wrapping
// ErrExists otherwise, so two callers racing to create a key agree on one.
// Implementations are safe for concurrent use.
type Store interface {
	Get(ctx context.Context) (*PrivateKey, error)
	Create(ctx context.Context, k *PrivateKey) error
}

// Ensure returns the key held by s, generating and storing one of algorithm
// alg (randomness from r) when s holds none.
func Ensure(ctx context.Context, s Store, r io.Reader, alg Algorithm) (*PrivateKey, error) {
	k, err := s.Get(ctx)
	if err == nil {
		return k, nil
	}
	if !errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("reading cluster key: %w", err)
	}
	k, err = Generate(r, alg)
	if err != nil {
		return nil, err
	}
	switch err := s.Create(ctx, k); {
	case err == nil:
		return k, nil
	case errors.Is(err, ErrExists):
		return s.Get(ctx)
	default:
		return nil, fmt.Errorf("storing cluster key: %w", err)
	}
}
