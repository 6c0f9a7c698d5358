package csr_test

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/internal/testkeys"
	"github.com/kubepact/kubepact/keys"
)

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

const caLifetime = 10 * 365 * 24 * time.Hour

type testCA struct {
	ca    *csr.LocalCA
	pem   []byte
	key   *keys.PrivateKey
	clock *clocktesting.FakeClock
}

func newCA(t *testing.T, lifetime time.Duration, opts csr.LocalCAOptions) testCA {
	t.Helper()
	certPEM, key, err := csr.GenerateCA(nil, "provider-ca", epoch, lifetime)
	require.NoError(t, err)
	clk := clocktesting.NewFakeClock(epoch)
	if opts.Clock == nil {
		opts.Clock = clk
	}
	ca, err := csr.NewLocalCA(certPEM, key, &opts)
	require.NoError(t, err)
	return testCA{ca: ca, pem: certPEM, key: key, clock: clk}
}

func parseCert(t *testing.T, b []byte) *x509.Certificate {
	t.Helper()
	c, err := csr.ParseCertificate(b)
	require.NoError(t, err)
	return c
}

func TestGenerateCA(t *testing.T) {
	t.Parallel()
	certPEM, key, err := csr.GenerateCA(nil, "provider-ca", epoch, time.Hour)
	require.NoError(t, err)
	cert := parseCert(t, certPEM)
	require.True(t, cert.IsCA)
	require.True(t, cert.BasicConstraintsValid)
	require.NotZero(t, cert.KeyUsage&x509.KeyUsageCertSign)
	require.Equal(t, "provider-ca", cert.Subject.CommonName)
	require.Equal(t, epoch.Add(-5*time.Minute), cert.NotBefore)
	require.Equal(t, epoch.Add(time.Hour), cert.NotAfter)
	require.Equal(t, keys.Ed25519, key.Algorithm())
	require.True(t, keys.Equal(key.Public(), cert.PublicKey))
	require.NoError(t, cert.CheckSignatureFrom(cert), "self-signed")
}

func TestNewLocalCAErrors(t *testing.T) {
	t.Parallel()
	certPEM, key, err := csr.GenerateCA(nil, "provider-ca", epoch, time.Hour)
	require.NoError(t, err)
	otherKey := testkeys.Generate(t, keys.Ed25519)

	// A leaf certificate: signed by the CA, not a CA itself.
	ca := newCA(t, caLifetime, csr.LocalCAOptions{})
	leafKey := testkeys.Generate(t, keys.Ed25519)
	leaf, err := ca.ca.Sign(t.Context(), csr.Request{CSR: check(t, leafKey, csr.ControlPlaneSubject(consumerID))})
	require.NoError(t, err)

	// A self-signed certificate that does not assert CA.
	selfSigned, err := x509.CreateCertificate(nil, &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "not-a-ca"},
		NotBefore: epoch, NotAfter: epoch.Add(time.Hour),
	}, &x509.Certificate{Subject: pkix.Name{CommonName: "not-a-ca"}}, otherKey.Public(), otherKey)
	require.NoError(t, err)

	tests := []struct {
		name string
		cert []byte
		key  *keys.PrivateKey
	}{
		{name: "garbage", cert: []byte("not a certificate"), key: key},
		{name: "leaf certificate", cert: leaf, key: leafKey},
		{name: "self-signed non-CA", cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: selfSigned}), key: otherKey},
		{name: "CA certificate with another key", cert: certPEM, key: otherKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ca, err := csr.NewLocalCA(tt.cert, tt.key, nil)
			require.ErrorIs(t, err, csr.ErrMalformedCertificate)
			require.Nil(t, ca)
		})
	}
}

func TestLocalCACertificate(t *testing.T) {
	t.Parallel()
	ca := newCA(t, caLifetime, csr.LocalCAOptions{})
	got := ca.ca.Certificate()
	require.Equal(t, ca.pem, got)
	got[0] ^= 0xff
	require.Equal(t, ca.pem, ca.ca.Certificate(), "Certificate returns a copy")
}

func TestLocalCASign(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		alg       keys.Algorithm
		wantUsage x509.KeyUsage
	}{
		{alg: keys.Ed25519, wantUsage: x509.KeyUsageDigitalSignature},
		{alg: keys.ECDSAP256, wantUsage: x509.KeyUsageDigitalSignature},
		{alg: keys.RSA2048, wantUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment},
	} {
		for _, subject := range []pkix.Name{csr.ControlPlaneSubject(consumerID), csr.ResourceSliceSubject(consumerID, sliceName)} {
			t.Run(tt.alg.String()+"/"+subject.CommonName, func(t *testing.T) {
				t.Parallel()
				ca := newCA(t, caLifetime, csr.LocalCAOptions{})
				key := testkeys.Generate(t, tt.alg)
				ca.clock.Step(time.Hour)
				now := ca.clock.Now()

				b, err := ca.ca.Sign(t.Context(), csr.Request{CSR: check(t, key, subject), Lifetime: 24 * time.Hour})
				require.NoError(t, err)
				cert := parseCert(t, b)

				roots := x509.NewCertPool()
				roots.AddCert(parseCert(t, ca.pem))
				_, err = cert.Verify(x509.VerifyOptions{
					Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
				})
				require.NoError(t, err, "chains to the CA for client auth")

				require.Equal(t, subject.CommonName, cert.Subject.CommonName)
				require.Equal(t, subject.Organization, cert.Subject.Organization)
				require.True(t, keys.Equal(key.Public(), cert.PublicKey))
				require.Equal(t, now.Add(-5*time.Minute), cert.NotBefore)
				require.Equal(t, now.Add(24*time.Hour), cert.NotAfter)
				require.Equal(t, tt.wantUsage, cert.KeyUsage)
				require.Equal(t, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, cert.ExtKeyUsage)
				require.True(t, cert.BasicConstraintsValid)
				require.False(t, cert.IsCA)
				require.Empty(t, cert.DNSNames)
				require.Empty(t, cert.IPAddresses)
				require.Empty(t, cert.EmailAddresses)
				require.Empty(t, cert.URIs)
			})
		}
	}
}

func TestLocalCALifetime(t *testing.T) {
	t.Parallel()
	const day = 24 * time.Hour
	tests := []struct {
		name        string
		caLifetime  time.Duration
		maxLifetime time.Duration
		requested   time.Duration
		want        time.Duration // NotAfter - epoch
	}{
		{name: "requested", caLifetime: caLifetime, requested: time.Hour, want: time.Hour},
		{name: "zero means the default maximum", caLifetime: caLifetime, requested: 0, want: csr.DefaultMaxLifetime},
		{name: "negative means the default maximum", caLifetime: caLifetime, requested: -time.Hour, want: csr.DefaultMaxLifetime},
		{name: "capped at the default maximum", caLifetime: caLifetime, requested: 2 * csr.DefaultMaxLifetime, want: csr.DefaultMaxLifetime},
		{name: "capped at MaxLifetime", caLifetime: caLifetime, maxLifetime: day, requested: 2 * day, want: day},
		{name: "zero capped at MaxLifetime", caLifetime: caLifetime, maxLifetime: day, requested: 0, want: day},
		{name: "under MaxLifetime", caLifetime: caLifetime, maxLifetime: day, requested: time.Hour, want: time.Hour},
		{name: "capped at the CA's NotAfter", caLifetime: 2 * time.Hour, requested: 10 * time.Hour, want: 2 * time.Hour},
		{name: "MaxLifetime beyond the CA's NotAfter", caLifetime: 2 * time.Hour, maxLifetime: day, requested: 0, want: 2 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ca := newCA(t, tt.caLifetime, csr.LocalCAOptions{MaxLifetime: tt.maxLifetime})
			key := testkeys.Generate(t, keys.Ed25519)
			b, err := ca.ca.Sign(t.Context(), csr.Request{CSR: check(t, key, csr.ControlPlaneSubject(consumerID)), Lifetime: tt.requested})
			require.NoError(t, err)
			cert := parseCert(t, b)
			require.Equal(t, epoch.Add(tt.want), cert.NotAfter)
			require.Equal(t, epoch.Add(-5*time.Minute), cert.NotBefore)
		})
	}
}

func TestLocalCASerialsDiffer(t *testing.T) {
	t.Parallel()
	ca := newCA(t, caLifetime, csr.LocalCAOptions{})
	c := check(t, testkeys.Generate(t, keys.Ed25519), csr.ControlPlaneSubject(consumerID))
	a, err := ca.ca.Sign(t.Context(), csr.Request{CSR: c})
	require.NoError(t, err)
	b, err := ca.ca.Sign(t.Context(), csr.Request{CSR: c})
	require.NoError(t, err)
	require.NotEqual(t, parseCert(t, a).SerialNumber, parseCert(t, b).SerialNumber)
}

// approverFunc adapts a function to csr.Approver and records the names it saw.
type approverFunc struct {
	mu     sync.Mutex
	names  []string
	decide func(name string, c *csr.Checked) error
}

func (a *approverFunc) Approve(_ context.Context, name string, c *csr.Checked) error {
	a.mu.Lock()
	a.names = append(a.names, name)
	a.mu.Unlock()
	return a.decide(name, c)
}

func TestLocalCAApprover(t *testing.T) {
	t.Parallel()
	key := testkeys.Generate(t, keys.Ed25519)
	c := check(t, key, csr.ControlPlaneSubject(consumerID))

	t.Run("approves", func(t *testing.T) {
		t.Parallel()
		var seen *csr.Checked
		a := &approverFunc{decide: func(_ string, c *csr.Checked) error { seen = c; return nil }}
		ca := newCA(t, caLifetime, csr.LocalCAOptions{Approver: a})
		b, err := ca.ca.Sign(t.Context(), csr.Request{CSR: c})
		require.NoError(t, err)
		require.NotEmpty(t, b)
		require.Same(t, c, seen)
		require.Len(t, a.names, 1)
		require.Regexp(t, `^local-[0-9a-f]{16}$`, a.names[0])
	})

	t.Run("denies", func(t *testing.T) {
		t.Parallel()
		a := &approverFunc{decide: func(name string, _ *csr.Checked) error {
			return &csr.DeniedError{Name: name, Reason: "PolicyDenied", Message: "not today"}
		}}
		ca := newCA(t, caLifetime, csr.LocalCAOptions{Approver: a})
		b, err := ca.ca.Sign(t.Context(), csr.Request{CSR: c})
		require.Nil(t, b)
		var denied *csr.DeniedError
		require.ErrorAs(t, err, &denied)
		require.Equal(t, "PolicyDenied", denied.Reason)
		require.Equal(t, a.names[0], denied.Name)
	})

	t.Run("fails", func(t *testing.T) {
		t.Parallel()
		errApprover := errors.New("approver unavailable")
		a := &approverFunc{decide: func(string, *csr.Checked) error { return errApprover }}
		ca := newCA(t, caLifetime, csr.LocalCAOptions{Approver: a})
		b, err := ca.ca.Sign(t.Context(), csr.Request{CSR: c})
		require.Nil(t, b)
		require.ErrorIs(t, err, errApprover)
	})
}

func TestLocalCASignErrors(t *testing.T) {
	t.Parallel()
	c := check(t, testkeys.Generate(t, keys.Ed25519), csr.ControlPlaneSubject(consumerID))
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel2()

	tests := []struct {
		name string
		ctx  context.Context
		req  csr.Request
		want error
	}{
		{name: "nil CSR", ctx: context.Background(), req: csr.Request{}, want: csr.ErrFailed},
		{name: "cancelled context", ctx: cancelled, req: csr.Request{CSR: c}, want: context.Canceled},
		{name: "expired context", ctx: expired, req: csr.Request{CSR: c}, want: context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := &approverFunc{decide: func(string, *csr.Checked) error { return nil }}
			ca := newCA(t, caLifetime, csr.LocalCAOptions{Approver: a})
			b, err := ca.ca.Sign(tt.ctx, tt.req)
			require.ErrorIs(t, err, tt.want)
			require.Nil(t, b)
			require.Empty(t, a.names, "nothing reaches the approver")
		})
	}
}

func TestLocalCAUsesRand(t *testing.T) {
	t.Parallel()
	errRead := errors.New("entropy exhausted")
	ca := newCA(t, caLifetime, csr.LocalCAOptions{Rand: failingReader{errRead}})
	b, err := ca.ca.Sign(t.Context(), csr.Request{CSR: check(t, testkeys.Generate(t, keys.Ed25519), csr.ControlPlaneSubject(consumerID))})
	require.ErrorIs(t, err, csr.ErrFailed)
	require.ErrorIs(t, err, errRead)
	require.Nil(t, b)
}

type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }
