package nonce_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/nonce"
)

// exampleStore is a nonce.Store in a map. Real stores keep nonces in Secrets;
// package fake has one for tests.
type exampleStore struct {
	mu sync.Mutex
	m  map[string]nonce.Entry
}

func (s *exampleStore) Put(_ context.Context, id string, e nonce.Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]nonce.Entry{}
	}
	s.m[id] = e
	return nil
}

func (s *exampleStore) Get(_ context.Context, id string) (nonce.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[id]
	if !ok {
		return nonce.Entry{}, nonce.ErrNotFound
	}
	return e, nil
}

func (s *exampleStore) MarkRedeemed(_ context.Context, id string, r nonce.Redemption) (nonce.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[id]
	if !ok {
		return nonce.Entry{}, nonce.ErrNotFound
	}
	if e.Redemption == nil {
		e.Redemption = &r
		s.m[id] = e
	}
	return e, nil
}

func (s *exampleStore) Consume(_ context.Context, id string) (nonce.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[id]
	if !ok {
		return nonce.Entry{}, nonce.ErrNotFound
	}
	delete(s.m, id)
	return e, nil
}

func ExampleGenerate() {
	// Real callers pass nil to draw from crypto/rand; a fixed reader shows the form.
	n, err := nonce.Generate(bytes.NewReader(make([]byte, nonce.Size)))
	if err != nil {
		panic(err)
	}
	fmt.Println(len(n.Text()))
	fmt.Println(n.Text())
	// Output:
	// 88
	// AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==
}

func ExampleParse() {
	n, err := nonce.Generate(nil)
	if err != nil {
		panic(err)
	}
	parsed, err := nonce.Parse(n.Text())
	fmt.Println(err, parsed.Equal(n))

	_, err = nonce.Parse("too short")
	fmt.Println(errors.Is(err, nonce.ErrMalformed))
	// Output:
	// <nil> true
	// true
}

func ExampleNonce_String() {
	n, err := nonce.Parse("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+Pw==")
	if err != nil {
		panic(err)
	}
	fmt.Println(n)
	fmt.Printf("%#v\n", n)
	fmt.Println(nonce.Nonce{})
	// Output:
	// nonce(AAEC…)
	// nonce(AAEC…)
	// nonce(<zero>)
}

func ExampleNonce_Equal() {
	a, _ := nonce.Generate(nil)
	b, _ := nonce.Parse(a.Text())
	c, _ := nonce.Generate(nil)
	fmt.Println(a.Equal(b), a.Equal(c))
	// Output: true false
}

func ExampleSign() {
	// Consumer: sign the provider's nonce with the cluster key.
	key, err := keys.Generate(nil, keys.Ed25519)
	if err != nil {
		panic(err)
	}
	n, err := nonce.Generate(nil)
	if err != nil {
		panic(err)
	}
	sig, err := nonce.Sign(nil, key, n)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(sig))
	// Output: 64
}

func ExampleVerify() {
	key, err := keys.Generate(nil, keys.ECDSAP256)
	if err != nil {
		panic(err)
	}
	n, _ := nonce.Generate(nil)
	sig, err := nonce.Sign(nil, key, n)
	if err != nil {
		panic(err)
	}
	fmt.Println(nonce.Verify(key.Public(), n, sig))

	other, _ := nonce.Generate(nil)
	fmt.Println(errors.Is(nonce.Verify(key.Public(), other, sig), keys.ErrBadSignature))
	// Output:
	// <nil>
	// true
}

func ExampleEnsure() {
	ctx := context.Background()
	s := &exampleStore{}
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	opts := &nonce.Options{TTL: 5 * time.Minute}

	first, _ := nonce.Ensure(ctx, s, "cl-consumer", start, opts)
	again, _ := nonce.Ensure(ctx, s, "cl-consumer", start.Add(time.Minute), opts)
	later, _ := nonce.Ensure(ctx, s, "cl-consumer", start.Add(5*time.Minute), opts)
	fmt.Println(first.Equal(again), first.Equal(later))
	// Output: true false
}

func ExampleRedeem() {
	ctx := context.Background()
	s := &exampleStore{}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	// Two Tenants of one key, and one of another (see tenant.Digest and
	// keys.Fingerprint).
	first := nonce.Redeemer{Tenant: bytes.Repeat([]byte{0xa}, 32), Key: "SHA256:consumer"}
	second := nonce.Redeemer{Tenant: bytes.Repeat([]byte{0xb}, 32), Key: "SHA256:consumer"}
	stranger := nonce.Redeemer{Tenant: bytes.Repeat([]byte{0xc}, 32), Key: "SHA256:stranger"}

	issued, _ := nonce.Ensure(ctx, s, "cl-consumer", now, nil)
	e, err := nonce.Redeem(ctx, s, "cl-consumer", first, now.Add(time.Minute), nil)
	fmt.Println(err, e.Nonce.Equal(issued))

	// The same Tenant resumes, the same key re-authenticates, another key
	// is refused.
	_, err = nonce.Redeem(ctx, s, "cl-consumer", first, now.Add(time.Hour), nil)
	fmt.Println(err)
	_, err = nonce.Redeem(ctx, s, "cl-consumer", second, now.Add(time.Hour), nil)
	fmt.Println(err)
	_, err = nonce.Redeem(ctx, s, "cl-consumer", stranger, now.Add(time.Minute), nil)
	fmt.Println(errors.Is(err, nonce.ErrRedeemed))

	// A redeemed nonce is replaced by the next Ensure; a late one expires.
	later, _ := nonce.Ensure(ctx, s, "cl-consumer", now.Add(2*time.Minute), nil)
	_, err = nonce.Redeem(ctx, s, "cl-consumer", stranger, now.Add(2*time.Minute+nonce.DefaultTTL), nil)
	fmt.Println(later.Equal(issued), errors.Is(err, nonce.ErrExpired))
	// Output:
	// <nil> true
	// <nil>
	// <nil>
	// true
	// false true
}

func ExampleEntry_Expired() {
	e := nonce.Entry{IssuedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	fmt.Println(e.Expired(e.IssuedAt.Add(time.Minute-time.Second), time.Minute))
	fmt.Println(e.Expired(e.IssuedAt.Add(time.Minute), time.Minute))
	// Output:
	// false
	// true
}

func ExampleSecret() {
	n, _ := nonce.Generate(nil)
	issued := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := nonce.Secret("cl-consumer", nonce.Entry{Nonce: n, IssuedAt: issued})
	fmt.Println(s.Namespace, s.Name, s.Labels[nonce.SecretLabel], len(s.Data[nonce.SecretKey]))
	fmt.Println(s.Annotations[nonce.IssuedAtAnnotation])
	// Output:
	// liqo-tenant-cl-consumer liqo-nonce true 88
	// 2026-01-02T03:04:05Z
}

func ExampleFromSecret() {
	n, _ := nonce.Generate(nil)
	issued := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	e, err := nonce.FromSecret(nonce.Secret("cl-consumer", nonce.Entry{Nonce: n, IssuedAt: issued}))
	fmt.Println(err, e.Nonce.Equal(n), e.IssuedAt.Equal(issued))
	// Output: <nil> true true
}

func ExampleSignedSecret() {
	n, _ := nonce.Parse("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+Pw==")
	s := nonce.SignedSecret("cl-provider", n, make([]byte, 64))
	fmt.Println(s.Namespace+"/"+s.Name, s.Labels[nonce.SignedSecretLabel], len(s.Data[nonce.SignedSecretKey]))
	// Output:
	// liqo-tenant-cl-provider/liqo-signed-nonce true 64
}
