package keys_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"strings"
	"sync"

	"github.com/kubepact/kubepact/keys"
)

// exampleRand returns a fixed source of randomness, so that the examples
// print the same Ed25519 keys every time. Real callers pass nil.
func exampleRand() *mathrand.ChaCha8 {
	return mathrand.NewChaCha8([32]byte([]byte("kubepact example seed, not secret")[:32]))
}

func ExampleGenerate() {
	for _, alg := range []keys.Algorithm{keys.Ed25519, keys.ECDSAP256} {
		k, err := keys.Generate(nil, alg)
		if err != nil {
			panic(err)
		}
		fmt.Println(k.Algorithm(), keys.Check(k.Public()) == nil)
	}
	_, err := keys.Generate(nil, keys.Algorithm(7))
	fmt.Println(errors.Is(err, keys.ErrUnsupported))
	// Output:
	// Ed25519 true
	// ECDSA-P256 true
	// true
}

func ExampleMarshalPrivateKey() {
	k, err := keys.Generate(nil, keys.Ed25519)
	if err != nil {
		panic(err)
	}
	b, err := keys.MarshalPrivateKey(k) // secret: store it, never print it
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.SplitN(string(b), "\n", 2)[0])
	// Output: -----BEGIN PRIVATE KEY-----
}

func ExampleParsePrivateKey() {
	k, err := keys.Generate(nil, keys.Ed25519)
	if err != nil {
		panic(err)
	}
	b, err := keys.MarshalPrivateKey(k)
	if err != nil {
		panic(err)
	}
	parsed, err := keys.ParsePrivateKey(b)
	if err != nil {
		panic(err)
	}
	fmt.Println(parsed.Algorithm(), keys.Equal(k.Public(), parsed.Public()))

	_, err = keys.ParsePrivateKey([]byte("not a key"))
	fmt.Println(errors.Is(err, keys.ErrMalformed))
	// Output:
	// Ed25519 true
	// true
}

func ExampleMarshalPublicKey() {
	k, err := keys.Generate(exampleRand(), keys.Ed25519)
	if err != nil {
		panic(err)
	}
	b, err := keys.MarshalPublicKey(k.Public())
	if err != nil {
		panic(err)
	}
	fmt.Print(string(b))
	// Output:
	// -----BEGIN PUBLIC KEY-----
	// MCowBQYDK2VwAyEAtYOjxNdAAjhwRRUpDIQA8NVsDrSGUkk/CDqGZzglRXE=
	// -----END PUBLIC KEY-----
}

func ExampleParsePublicKey() {
	k, err := keys.Generate(nil, keys.Ed25519)
	if err != nil {
		panic(err)
	}
	pemKey, err := keys.MarshalPublicKey(k.Public())
	if err != nil {
		panic(err)
	}
	rawKey := []byte(k.Public().(ed25519.PublicKey)) // as Liqo consumers before v1.0.2 send it

	for _, b := range [][]byte{pemKey, rawKey} {
		pub, err := keys.ParsePublicKey(b)
		fmt.Println(err == nil, keys.Equal(k.Public(), pub))
	}
	// Output:
	// true true
	// true true
}

func ExampleCheck() {
	p256, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	p224, err := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	if err != nil {
		panic(err)
	}
	fmt.Println(keys.Check(&p256.PublicKey))
	fmt.Println(errors.Is(keys.Check(&p224.PublicKey), keys.ErrUnsupported))
	// Output:
	// <nil>
	// true
}

func ExampleEqual() {
	a, _ := keys.Generate(nil, keys.Ed25519)
	b, _ := keys.Generate(nil, keys.Ed25519)
	fmt.Println(keys.Equal(a.Public(), a.Public()), keys.Equal(a.Public(), b.Public()))
	// Output: true false
}

func ExampleFingerprint() {
	k, err := keys.Generate(exampleRand(), keys.Ed25519)
	if err != nil {
		panic(err)
	}
	fmt.Println(keys.Fingerprint(k.Public()))
	// Output: SHA256:LJ/Nyfi17lZuVflT2NdL+7ISAfVIuBBCaxJrKoIa6bs
}

func ExamplePrivateKey_String() {
	k, err := keys.Generate(exampleRand(), keys.Ed25519)
	if err != nil {
		panic(err)
	}
	// Every verb prints the algorithm and the public fingerprint, never the key.
	fmt.Printf("%v\n%#v\n", k, k)
	// Output:
	// keys.PrivateKey(Ed25519, SHA256:LJ/Nyfi17lZuVflT2NdL+7ISAfVIuBBCaxJrKoIa6bs)
	// keys.PrivateKey(Ed25519, SHA256:LJ/Nyfi17lZuVflT2NdL+7ISAfVIuBBCaxJrKoIa6bs)
}

// exampleStore is a keys.Store in memory. Real stores keep the key in a
// Secret; package fake has one for tests.
type exampleStore struct {
	mu  sync.Mutex
	key *keys.PrivateKey
}

func (s *exampleStore) Get(context.Context) (*keys.PrivateKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key == nil {
		return nil, keys.ErrNotFound
	}
	return s.key, nil
}

func (s *exampleStore) Create(_ context.Context, k *keys.PrivateKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key != nil {
		return keys.ErrExists
	}
	s.key = k
	return nil
}

func ExampleEnsure() {
	ctx := context.Background()
	s := &exampleStore{}
	first, err := keys.Ensure(ctx, s, nil, keys.Ed25519)
	if err != nil {
		panic(err)
	}
	second, err := keys.Ensure(ctx, s, nil, keys.Ed25519)
	if err != nil {
		panic(err)
	}
	fmt.Println(first.Algorithm(), keys.Equal(first.Public(), second.Public()))
	// Output: Ed25519 true
}

func ExampleSignMessage() {
	k, err := keys.Generate(nil, keys.ECDSAP256)
	if err != nil {
		panic(err)
	}
	msg := []byte("the nonce text")
	sig, err := keys.SignMessage(nil, k, msg)
	if err != nil {
		panic(err)
	}
	fmt.Println(keys.VerifyMessage(k.Public(), msg, sig))
	// Output: <nil>
}

func ExampleVerifyMessage() {
	k, err := keys.Generate(exampleRand(), keys.Ed25519)
	if err != nil {
		panic(err)
	}
	msg := []byte("the nonce text")
	sig, err := keys.SignMessage(nil, k, msg)
	if err != nil {
		panic(err)
	}
	fmt.Println(keys.VerifyMessage(k.Public(), msg, sig))

	tampered := bytes.ToUpper(msg)
	fmt.Println(errors.Is(keys.VerifyMessage(k.Public(), tampered, sig), keys.ErrBadSignature))
	// Output:
	// <nil>
	// true
}

func ExampleSecret() {
	k, err := keys.Generate(nil, keys.Ed25519)
	if err != nil {
		panic(err)
	}
	s, err := keys.Secret(keys.DefaultNamespace, k) // its data is secret
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Namespace, s.Name, len(s.Data[keys.PrivateKeySecretKey]) > 0, len(s.Data[keys.PublicKeySecretKey]) > 0)
	// Output: liqo authentication-keys true true
}

func ExampleFromSecret() {
	k, _ := keys.Generate(nil, keys.Ed25519)
	s, _ := keys.Secret(keys.DefaultNamespace, k)
	read, err := keys.FromSecret(s)
	fmt.Println(err, keys.Equal(k.Public(), read.Public()))
	// Output: <nil> true
}
