package csr_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/internal/testkeys"
	"github.com/kubepact/kubepact/keys"
)

func TestCacheKeySecretName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key  csr.CacheKey
		want string
	}{
		{key: csr.CacheKey{ConsumerID: consumerID}, want: "liqo-remote-certificate"},
		{key: csr.CacheKey{}, want: "liqo-remote-certificate"},
		{key: csr.CacheKey{ConsumerID: consumerID, Slice: sliceName}, want: "liqo-remote-certificate-slice-a"},
		{key: csr.CacheKey{ConsumerID: "cl-other", Slice: "gpu"}, want: "liqo-remote-certificate-gpu"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, tt.key.SecretName())
		})
	}
}

func TestParseCertificate(t *testing.T) {
	t.Parallel()
	ca := newCA(t, caLifetime, csr.LocalCAOptions{})
	leaf, err := ca.ca.Sign(t.Context(), csr.Request{CSR: check(t, testkeys.Generate(t, keys.Ed25519), csr.ControlPlaneSubject(consumerID))})
	require.NoError(t, err)

	cert, err := csr.ParseCertificate(append(bytes.Clone(leaf), ca.pem...))
	require.NoError(t, err)
	require.Equal(t, consumerID, cert.Subject.CommonName, "the first certificate of a chain")
}

func TestParseCertificateErrors(t *testing.T) {
	t.Parallel()
	ca := newCA(t, caLifetime, csr.LocalCAOptions{})
	block, _ := pem.Decode(ca.pem)
	request := create(t, testkeys.Generate(t, keys.Ed25519), csr.ControlPlaneSubject(consumerID))
	tests := []struct {
		name string
		in   []byte
	}{
		{name: "nil", in: nil},
		{name: "garbage", in: []byte("not a certificate")},
		{name: "DER without PEM", in: block.Bytes},
		{name: "certificate request", in: request},
		{name: "CERTIFICATE holding garbage", in: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("garbage")})},
		{name: "oversized", in: append(bytes.Clone(ca.pem), bytes.Repeat([]byte("\n"), csr.MaxCertificateSize)...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cert, err := csr.ParseCertificate(tt.in)
			require.ErrorIs(t, err, csr.ErrMalformedCertificate)
			require.Nil(t, cert)
		})
	}
}

// memCache is a csr.Cache in a map. A non-nil err field makes the matching
// call fail.
type memCache struct {
	mu      sync.Mutex
	entries map[csr.CacheKey]csr.CacheEntry
	puts    int
	getErr  error
	putErr  error
}

func (c *memCache) Get(_ context.Context, k csr.CacheKey) (csr.CacheEntry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.getErr != nil {
		return csr.CacheEntry{}, c.getErr
	}
	e, ok := c.entries[k]
	if !ok {
		return csr.CacheEntry{}, csr.ErrNotFound
	}
	return e, nil
}

func (c *memCache) Put(_ context.Context, k csr.CacheKey, e csr.CacheEntry) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.putErr != nil {
		return c.putErr
	}
	if c.entries == nil {
		c.entries = map[csr.CacheKey]csr.CacheEntry{}
	}
	c.entries[k] = e
	c.puts++
	return nil
}

func (c *memCache) Delete(_ context.Context, k csr.CacheKey) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, k)
	return nil
}

// countingSigner counts the requests that reach its Signer.
type countingSigner struct {
	csr.Signer
	mu    sync.Mutex
	calls int
}

func (s *countingSigner) Sign(ctx context.Context, r csr.Request) ([]byte, error) {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	return s.Signer.Sign(ctx, r)
}

func (s *countingSigner) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

var cpKey = csr.CacheKey{ConsumerID: consumerID}

func TestIssue(t *testing.T) {
	t.Parallel()
	ca := newCA(t, caLifetime, csr.LocalCAOptions{})
	s := &countingSigner{Signer: ca.ca}
	c := &memCache{}
	key := testkeys.Generate(t, keys.Ed25519)
	req := csr.Request{CSR: check(t, key, csr.ControlPlaneSubject(consumerID)), Lifetime: 3 * time.Hour}

	first, err := csr.Issue(t.Context(), s, c, cpKey, req, ca.clock.Now())
	require.NoError(t, err)
	require.Equal(t, 1, s.count())
	require.Equal(t, csr.CacheEntry{CSR: req.CSR.PEM(), Certificate: first}, c.entries[cpKey])

	second, err := csr.Issue(t.Context(), s, c, cpKey, req, ca.clock.Now())
	require.NoError(t, err)
	require.Equal(t, first, second, "same CSR: the cached certificate")
	require.Equal(t, 1, s.count())

	// A CSR with the same subject for another key.
	other := csr.Request{CSR: check(t, testkeys.Generate(t, keys.Ed25519), csr.ControlPlaneSubject(consumerID)), Lifetime: 3 * time.Hour}
	third, err := csr.Issue(t.Context(), s, c, cpKey, other, ca.clock.Now())
	require.NoError(t, err)
	require.NotEqual(t, first, third)
	require.Equal(t, 2, s.count())
	require.True(t, keys.Equal(other.CSR.PublicKey(), parseCert(t, third).PublicKey))
	require.Equal(t, other.CSR.PEM(), c.entries[cpKey].CSR)
	require.Equal(t, third, c.entries[cpKey].Certificate)
}

func TestIssueKeepsIdentitiesApart(t *testing.T) {
	t.Parallel()
	ca := newCA(t, caLifetime, csr.LocalCAOptions{})
	s := &countingSigner{Signer: ca.ca}
	c := &memCache{}
	key := testkeys.Generate(t, keys.Ed25519)
	cp := csr.Request{CSR: check(t, key, csr.ControlPlaneSubject(consumerID))}
	slice := csr.Request{CSR: check(t, key, csr.ResourceSliceSubject(consumerID, sliceName))}
	sliceKey := csr.CacheKey{ConsumerID: consumerID, Slice: sliceName}

	a, err := csr.Issue(t.Context(), s, c, cpKey, cp, epoch)
	require.NoError(t, err)
	b, err := csr.Issue(t.Context(), s, c, sliceKey, slice, epoch)
	require.NoError(t, err)
	require.Equal(t, 2, s.count())
	require.Equal(t, a, c.entries[cpKey].Certificate)
	require.Equal(t, b, c.entries[sliceKey].Certificate)
}

func TestIssueRenewsFromRenewAt(t *testing.T) {
	t.Parallel()
	// The LocalCA backdates by five minutes: a three-hour certificate lives
	// 3h5m, and is re-signed from its RenewAt on, between half of that
	// (1h32m30s) and two thirds (2h3m20s) after it begins.
	const lifetime = 3 * time.Hour
	tests := []struct {
		name    string
		at      func(first *x509.Certificate) time.Time
		renewed bool
	}{
		{name: "just issued", at: func(c *x509.Certificate) time.Time { return epoch }},
		{name: "just before half the lifetime", at: func(c *x509.Certificate) time.Time {
			return c.NotBefore.Add(c.NotAfter.Sub(c.NotBefore)/2 - time.Nanosecond)
		}},
		{name: "just before RenewAt", at: func(c *x509.Certificate) time.Time { return csr.RenewAt(c).Add(-time.Nanosecond) }},
		{name: "at RenewAt", at: csr.RenewAt, renewed: true},
		{name: "at two thirds", at: func(c *x509.Certificate) time.Time {
			return c.NotBefore.Add(c.NotAfter.Sub(c.NotBefore) * 2 / 3)
		}, renewed: true},
		{name: "expired", at: func(*x509.Certificate) time.Time { return epoch.Add(4 * time.Hour) }, renewed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ca := newCA(t, caLifetime, csr.LocalCAOptions{})
			s := &countingSigner{Signer: ca.ca}
			c := &memCache{}
			req := csr.Request{CSR: check(t, testkeys.Generate(t, keys.Ed25519), csr.ControlPlaneSubject(consumerID)), Lifetime: lifetime}
			first, err := csr.Issue(t.Context(), s, c, cpKey, req, ca.clock.Now())
			require.NoError(t, err)

			ca.clock.SetTime(tt.at(parseCert(t, first)))
			got, err := csr.Issue(t.Context(), s, c, cpKey, req, ca.clock.Now())
			require.NoError(t, err)
			if !tt.renewed {
				require.Equal(t, first, got)
				require.Equal(t, 1, s.count())
				return
			}
			require.NotEqual(t, first, got)
			require.Equal(t, 2, s.count())
			// Certificates count whole seconds.
			require.Equal(t, ca.clock.Now().Add(lifetime).Truncate(time.Second), parseCert(t, got).NotAfter)
			require.Equal(t, got, c.entries[cpKey].Certificate)
		})
	}
}

func TestIssueSignsAgainWhenCacheIsUnusable(t *testing.T) {
	t.Parallel()
	ca := newCA(t, caLifetime, csr.LocalCAOptions{})
	req := csr.Request{CSR: check(t, testkeys.Generate(t, keys.Ed25519), csr.ControlPlaneSubject(consumerID)), Lifetime: time.Hour}
	valid, err := ca.ca.Sign(t.Context(), req)
	require.NoError(t, err)
	// A certificate that starts an hour from now, from a CA whose clock runs ahead.
	ahead := newCA(t, caLifetime, csr.LocalCAOptions{Clock: clocktesting.NewFakePassiveClock(epoch.Add(time.Hour))})
	future, err := ahead.ca.Sign(t.Context(), req)
	require.NoError(t, err)

	tests := []struct {
		name  string
		entry csr.CacheEntry
		now   time.Time
	}{
		{name: "garbage certificate", entry: csr.CacheEntry{CSR: req.CSR.PEM(), Certificate: []byte("garbage")}, now: epoch},
		{name: "no certificate", entry: csr.CacheEntry{CSR: req.CSR.PEM()}, now: epoch},
		{name: "before NotBefore", entry: csr.CacheEntry{CSR: req.CSR.PEM(), Certificate: future}, now: epoch},
		{name: "for another CSR", entry: csr.CacheEntry{CSR: []byte("another CSR"), Certificate: valid}, now: epoch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &countingSigner{Signer: ca.ca}
			c := &memCache{entries: map[csr.CacheKey]csr.CacheEntry{cpKey: tt.entry}}
			got, err := csr.Issue(t.Context(), s, c, cpKey, req, tt.now)
			require.NoError(t, err)
			require.Equal(t, 1, s.count())
			require.Equal(t, got, c.entries[cpKey].Certificate)
			parseCert(t, got)
		})
	}
}

type deniedSigner struct{}

func (deniedSigner) Sign(context.Context, csr.Request) ([]byte, error) {
	return nil, &csr.DeniedError{Name: "liqo-identity-x", Reason: "Denied"}
}

func TestIssueErrors(t *testing.T) {
	t.Parallel()
	ca := newCA(t, caLifetime, csr.LocalCAOptions{})
	req := csr.Request{CSR: check(t, testkeys.Generate(t, keys.Ed25519), csr.ControlPlaneSubject(consumerID))}
	errCache := errors.New("cache unavailable")

	t.Run("Get fails", func(t *testing.T) {
		t.Parallel()
		s := &countingSigner{Signer: ca.ca}
		cert, err := csr.Issue(t.Context(), s, &memCache{getErr: errCache}, cpKey, req, epoch)
		require.ErrorIs(t, err, errCache)
		require.Nil(t, cert)
		require.Zero(t, s.count(), "no signing when the cache cannot be read")
	})
	t.Run("Put fails", func(t *testing.T) {
		t.Parallel()
		s := &countingSigner{Signer: ca.ca}
		cert, err := csr.Issue(t.Context(), s, &memCache{putErr: errCache}, cpKey, req, epoch)
		require.ErrorIs(t, err, errCache)
		require.Nil(t, cert)
	})
	t.Run("denied", func(t *testing.T) {
		t.Parallel()
		c := &memCache{}
		cert, err := csr.Issue(t.Context(), deniedSigner{}, c, cpKey, req, epoch)
		var denied *csr.DeniedError
		require.ErrorAs(t, err, &denied)
		require.Equal(t, "liqo-identity-x", denied.Name)
		require.Nil(t, cert)
		require.Zero(t, c.puts)
	})
	t.Run("cancelled", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		c := &memCache{}
		cert, err := csr.Issue(ctx, ca.ca, c, cpKey, req, epoch)
		require.ErrorIs(t, err, context.Canceled)
		require.Nil(t, cert)
		require.Zero(t, c.puts)
	})
}

// TestCached checks that Cached answers exactly as Issue does from the
// cache: the certificate of the same CSR while it is fresh, nil otherwise.
func TestCached(t *testing.T) {
	t.Parallel()
	ca := newCA(t, caLifetime, csr.LocalCAOptions{})
	req := csr.Request{CSR: check(t, testkeys.Generate(t, keys.Ed25519), csr.ControlPlaneSubject(consumerID)), Lifetime: 3 * time.Hour}
	cert, err := ca.ca.Sign(t.Context(), req)
	require.NoError(t, err)
	entry := csr.CacheEntry{CSR: req.CSR.PEM(), Certificate: cert}
	other := csr.Request{CSR: check(t, testkeys.Generate(t, keys.Ed25519), csr.ControlPlaneSubject(consumerID)), Lifetime: 3 * time.Hour}

	require.Equal(t, cert, csr.Cached(entry, req, ca.clock.Now()), "fresh, same CSR")
	tests := []struct {
		name  string
		entry csr.CacheEntry
		r     csr.Request
		now   time.Time
	}{
		{name: "another CSR", entry: entry, r: other, now: ca.clock.Now()},
		{name: "due for renewal", entry: entry, r: req, now: ca.clock.Now().Add(2*time.Hour + time.Minute)},
		{name: "expired", entry: entry, r: req, now: ca.clock.Now().Add(4 * time.Hour)},
		{name: "garbage certificate", entry: csr.CacheEntry{CSR: req.CSR.PEM(), Certificate: []byte("garbage")}, r: req, now: ca.clock.Now()},
		{name: "empty entry", r: req, now: ca.clock.Now()},
		{name: "no CSR", entry: entry, now: ca.clock.Now()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Nil(t, csr.Cached(tt.entry, tt.r, tt.now))
		})
	}
}

// TestSignChecked checks that SignChecked returns only a certificate that
// passes CheckIssued, and the signer's errors as they are.
func TestSignChecked(t *testing.T) {
	t.Parallel()
	ca := newCA(t, caLifetime, csr.LocalCAOptions{})
	req := csr.Request{CSR: check(t, testkeys.Generate(t, keys.Ed25519), csr.ControlPlaneSubject(consumerID)), Lifetime: time.Hour}

	cert, err := csr.SignChecked(t.Context(), ca.ca, req, ca.clock.Now())
	require.NoError(t, err)
	require.True(t, keys.Equal(req.CSR.PublicKey(), parseCert(t, cert).PublicKey))

	t.Run("no CSR", func(t *testing.T) {
		t.Parallel()
		s := &countingSigner{Signer: ca.ca}
		_, err := csr.SignChecked(t.Context(), s, csr.Request{}, ca.clock.Now())
		require.ErrorIs(t, err, csr.ErrFailed)
		require.Zero(t, s.count())
	})
	t.Run("denied", func(t *testing.T) {
		t.Parallel()
		_, err := csr.SignChecked(t.Context(), deniedSigner{}, req, ca.clock.Now())
		var denied *csr.DeniedError
		require.ErrorAs(t, err, &denied)
	})
	t.Run("another key", func(t *testing.T) {
		t.Parallel()
		other := csr.Request{CSR: check(t, testkeys.Generate(t, keys.Ed25519), csr.ControlPlaneSubject(consumerID)), Lifetime: time.Hour}
		swapped := signerFunc(func(ctx context.Context, _ csr.Request) ([]byte, error) { return ca.ca.Sign(ctx, other) })
		cert, err := csr.SignChecked(t.Context(), swapped, req, ca.clock.Now())
		require.ErrorIs(t, err, csr.ErrBadCertificate)
		require.Nil(t, cert)
	})
}

type signerFunc func(context.Context, csr.Request) ([]byte, error)

func (f signerFunc) Sign(ctx context.Context, r csr.Request) ([]byte, error) { return f(ctx, r) }
