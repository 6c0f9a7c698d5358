package csr_test

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"sync"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/keys"
)

func ExampleControlPlaneSubject() {
	s := csr.ControlPlaneSubject("cl-consumer")
	fmt.Println(s.CommonName, s.Organization)
	// Output: cl-consumer [liqo.io]
}

func ExampleResourceSliceSubject() {
	s := csr.ResourceSliceSubject("cl-consumer", "slice-a")
	fmt.Println(s.CommonName, s.Organization)
	// Output: slice-a-573ffa690333 [cl-consumer]
}

func ExampleCreate() {
	key, err := keys.Generate(nil, keys.Ed25519)
	if err != nil {
		panic(err)
	}
	pemCSR, err := csr.Create(nil, key, csr.ControlPlaneSubject("cl-consumer"))
	if err != nil {
		panic(err)
	}
	fmt.Println(string(pemCSR[:35]))
	// Output: -----BEGIN CERTIFICATE REQUEST-----
}

func ExampleCheck() {
	key, err := keys.Generate(nil, keys.Ed25519)
	if err != nil {
		panic(err)
	}
	pemCSR, err := csr.Create(nil, key, csr.ControlPlaneSubject("cl-consumer"))
	if err != nil {
		panic(err)
	}
	checked, err := csr.Check(pemCSR, csr.ControlPlanePolicy("cl-consumer", key.Public()))
	if err != nil {
		panic(err)
	}
	fmt.Println(checked.Subject().CommonName, keys.Equal(checked.PublicKey(), key.Public()))

	// A CSR that asks for one more group is refused.
	greedy, err := csr.Create(nil, key, pkix.Name{CommonName: "cl-consumer", Organization: []string{"liqo.io", "system:masters"}})
	if err != nil {
		panic(err)
	}
	_, err = csr.Check(greedy, csr.ControlPlanePolicy("cl-consumer", key.Public()))
	fmt.Println(errors.Is(err, csr.ErrOrganization))

	// So is a CSR for another consumer.
	_, err = csr.Check(pemCSR, csr.ControlPlanePolicy("cl-other", key.Public()))
	fmt.Println(errors.Is(err, csr.ErrCommonName))
	// Output:
	// cl-consumer true
	// true
	// true
}

func ExampleControlPlanePolicy() {
	p := csr.ControlPlanePolicy("cl-consumer", nil)
	fmt.Println(p.CommonName, p.Organization)
	// Output: cl-consumer liqo.io
}

func ExampleResourceSlicePolicy() {
	p := csr.ResourceSlicePolicy("cl-consumer", "slice-a", nil)
	fmt.Println(p.CommonName, p.Organization)
	// Output: slice-a-573ffa690333 cl-consumer
}

func ExampleGenerateCA() {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	certPEM, key, err := csr.GenerateCA(nil, "provider-ca", now, 24*time.Hour)
	if err != nil {
		panic(err)
	}
	cert, err := csr.ParseCertificate(certPEM)
	if err != nil {
		panic(err)
	}
	fmt.Println(cert.Subject.CommonName, cert.IsCA, key.Algorithm())
	fmt.Println(cert.NotBefore, cert.NotAfter)
	// Output:
	// provider-ca true Ed25519
	// 2026-01-02 02:59:05 +0000 UTC 2026-01-03 03:04:05 +0000 UTC
}

func ExampleNewLocalCA() {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	certPEM, caKey, err := csr.GenerateCA(nil, "provider-ca", now, 365*24*time.Hour)
	if err != nil {
		panic(err)
	}
	_, err = csr.NewLocalCA(certPEM, caKey, &csr.LocalCAOptions{
		Clock:       clocktesting.NewFakePassiveClock(now),
		MaxLifetime: 30 * 24 * time.Hour,
	})
	fmt.Println(err)

	other, _ := keys.Generate(nil, keys.Ed25519)
	_, err = csr.NewLocalCA(certPEM, other, nil)
	fmt.Println(errors.Is(err, csr.ErrMalformedCertificate))
	// Output:
	// <nil>
	// true
}

func ExampleLocalCA_Sign() {
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	certPEM, caKey, err := csr.GenerateCA(nil, "provider-ca", now, 365*24*time.Hour)
	if err != nil {
		panic(err)
	}
	ca, err := csr.NewLocalCA(certPEM, caKey, &csr.LocalCAOptions{Clock: clocktesting.NewFakePassiveClock(now)})
	if err != nil {
		panic(err)
	}

	// Consumer side: a key and a CSR.
	key, _ := keys.Generate(nil, keys.Ed25519)
	pemCSR, _ := csr.Create(nil, key, csr.ControlPlaneSubject("cl-consumer"))

	// Provider side: check, then sign.
	checked, err := csr.Check(pemCSR, csr.ControlPlanePolicy("cl-consumer", key.Public()))
	if err != nil {
		panic(err)
	}
	leafPEM, err := ca.Sign(ctx, csr.Request{CSR: checked, Lifetime: 24 * time.Hour})
	if err != nil {
		panic(err)
	}
	leaf, _ := csr.ParseCertificate(leafPEM)
	fmt.Println(leaf.Subject.CommonName, leaf.Subject.Organization)
	fmt.Println(leaf.NotBefore, leaf.NotAfter)
	fmt.Println(leaf.ExtKeyUsage[0] == x509.ExtKeyUsageClientAuth)
	// Output:
	// cl-consumer [liqo.io]
	// 2026-01-02 02:59:05 +0000 UTC 2026-01-03 03:04:05 +0000 UTC
	// true
}

// denyAll is an Approver that refuses every request.
type denyAll struct{}

func (denyAll) Approve(_ context.Context, name string, _ *csr.Checked) error {
	return &csr.DeniedError{Name: name, Reason: "Maintenance", Message: "no new identities today"}
}

func ExampleDeniedError() {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	certPEM, caKey, _ := csr.GenerateCA(nil, "provider-ca", now, 365*24*time.Hour)
	ca, _ := csr.NewLocalCA(certPEM, caKey, &csr.LocalCAOptions{Approver: denyAll{}})

	key, _ := keys.Generate(nil, keys.Ed25519)
	pemCSR, _ := csr.Create(nil, key, csr.ControlPlaneSubject("cl-consumer"))
	checked, _ := csr.Check(pemCSR, csr.ControlPlanePolicy("cl-consumer", key.Public()))

	_, err := ca.Sign(context.Background(), csr.Request{CSR: checked})
	var denied *csr.DeniedError
	if errors.As(err, &denied) {
		fmt.Println(denied.Reason)
	}
	// Output: Maintenance
}

// exampleCache is a csr.Cache in a map. Real caches are Secrets; package
// fake has one for tests.
type exampleCache struct {
	mu sync.Mutex
	m  map[csr.CacheKey]csr.CacheEntry
}

func (c *exampleCache) Get(_ context.Context, k csr.CacheKey) (csr.CacheEntry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok {
		return csr.CacheEntry{}, csr.ErrNotFound
	}
	return e, nil
}

func (c *exampleCache) Put(_ context.Context, k csr.CacheKey, e csr.CacheEntry) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[csr.CacheKey]csr.CacheEntry{}
	}
	c.m[k] = e
	return nil
}

func (c *exampleCache) Delete(_ context.Context, k csr.CacheKey) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, k)
	return nil
}

func ExampleIssue() {
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	certPEM, caKey, _ := csr.GenerateCA(nil, "provider-ca", now, 365*24*time.Hour)
	ca, _ := csr.NewLocalCA(certPEM, caKey, &csr.LocalCAOptions{Clock: clocktesting.NewFakePassiveClock(now)})

	key, _ := keys.Generate(nil, keys.Ed25519)
	pemCSR, _ := csr.Create(nil, key, csr.ControlPlaneSubject("cl-consumer"))
	checked, _ := csr.Check(pemCSR, csr.ControlPlanePolicy("cl-consumer", key.Public()))
	req := csr.Request{CSR: checked, Lifetime: 30 * 24 * time.Hour}

	cache := &exampleCache{}
	cacheKey := csr.CacheKey{ConsumerID: "cl-consumer"}
	first, _ := csr.Issue(ctx, ca, cache, cacheKey, req, now)
	// A repeated handshake with the same CSR gets the same certificate.
	again, _ := csr.Issue(ctx, ca, cache, cacheKey, req, now.Add(24*time.Hour))
	fmt.Println(string(first) == string(again), cacheKey.SecretName())
	// Output: true liqo-remote-certificate
}

func ExampleCacheKey_SecretName() {
	fmt.Println(csr.CacheKey{ConsumerID: "cl-consumer"}.SecretName())
	fmt.Println(csr.CacheKey{ConsumerID: "cl-consumer", Slice: "slice-a"}.SecretName())
	// Output:
	// liqo-remote-certificate
	// liqo-remote-certificate-slice-a
}

func ExampleParseCertificate() {
	certPEM, _, _ := csr.GenerateCA(nil, "provider-ca", time.Now(), time.Hour)
	cert, err := csr.ParseCertificate(certPEM)
	fmt.Println(err, cert.Subject.CommonName)

	_, err = csr.ParseCertificate([]byte("not a certificate"))
	fmt.Println(errors.Is(err, csr.ErrMalformedCertificate))
	// Output:
	// <nil> provider-ca
	// true
}

func ExampleCacheSecret() {
	k := csr.CacheKey{ConsumerID: "cl-consumer", Slice: "slice-a"}
	s := csr.CacheSecret(k, csr.CacheEntry{CSR: []byte("csr"), Certificate: []byte("cert")})
	fmt.Println(s.Namespace, s.Name)
	e := csr.CacheEntryFromSecret(s)
	fmt.Println(string(e.CSR), string(e.Certificate))
	// Output:
	// liqo-tenant-cl-consumer liqo-remote-certificate-slice-a
	// csr cert
}

func ExampleCacheEntryFromSecret() {
	s := csr.CacheSecret(csr.CacheKey{ConsumerID: "cl-consumer"}, csr.CacheEntry{CSR: []byte("csr"), Certificate: []byte("cert")})
	e := csr.CacheEntryFromSecret(s)
	fmt.Println(len(e.CSR), len(e.Certificate))
	// Output: 3 4
}

func ExampleCacheKey_Namespace() {
	fmt.Println(csr.CacheKey{ConsumerID: "cl-consumer"}.Namespace())
	// Output: liqo-tenant-cl-consumer
}

func ExampleRenewSpread() {
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	certPEM, caKey, err := csr.GenerateCA(nil, "provider-ca", now, 365*24*time.Hour)
	if err != nil {
		panic(err)
	}
	ca, err := csr.NewLocalCA(certPEM, caKey, &csr.LocalCAOptions{Clock: clocktesting.NewFakePassiveClock(now)})
	if err != nil {
		panic(err)
	}
	// A provider signs certificates for 100 consumers in the same second...
	var certs []*x509.Certificate
	for i := range 100 {
		id := fmt.Sprintf("cl-consumer-%d", i)
		key, _ := keys.Generate(nil, keys.Ed25519)
		pemCSR, _ := csr.Create(nil, key, csr.ControlPlaneSubject(id))
		checked, err := csr.Check(pemCSR, csr.ControlPlanePolicy(id, key.Public()))
		if err != nil {
			panic(err)
		}
		leafPEM, err := ca.Sign(ctx, csr.Request{CSR: checked, Lifetime: 24 * time.Hour})
		if err != nil {
			panic(err)
		}
		leaf, _ := csr.ParseCertificate(leafPEM)
		certs = append(certs, leaf)
	}
	// ... and re-signs them over the window, each at its own RenewAt, not
	// all at two thirds of the day.
	window := csr.MaxRenewFraction - csr.MinRenewFraction
	spread := csr.RenewSpread(certs)
	fmt.Println(spread > window/2, spread < window)
	// Output: true true
}
