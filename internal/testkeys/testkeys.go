// Package testkeys makes the keys tests need. RSA key generation is slow, so
// each test binary makes one RSA-2048 key and one (weak) RSA-1024 key and
// hands them to every caller.
package testkeys

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"sync"
	"testing"

	"github.com/kubepact/kubepact/keys"
)

var (
	rsaKey = sync.OnceValues(func() (*keys.PrivateKey, error) {
		return keys.Generate(nil, keys.RSA2048)
	})
	weakRSA = sync.OnceValues(func() (*rsa.PrivateKey, error) {
		return rsa.GenerateKey(rand.Reader, 1024)
	})
)

// Generate returns a key of algorithm alg: a new one, except for RSA-2048,
// where every caller gets the same key.
func Generate(t testing.TB, alg keys.Algorithm) *keys.PrivateKey {
	t.Helper()
	k, err := rsaKey()
	if alg != keys.RSA2048 {
		k, err = keys.Generate(nil, alg)
	}
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// WeakRSA returns an RSA-1024 key, which kubepact must refuse.
func WeakRSA(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	k, err := weakRSA()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// ECDSA returns a new ECDSA key on curve c, whether kubepact accepts the
// curve or not.
func ECDSA(t testing.TB, c elliptic.Curve) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(c, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
