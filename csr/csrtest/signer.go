package csrtest

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/keys"
)

// SignerHarness tells RunSigner how to use the Signer under test.
type SignerHarness struct {
	// New returns the Signer under test, which has its requests approved
	// or denied by a, and the PEM bundle of the CAs its certificates chain
	// to. Required.
	New func(t *testing.T, a csr.Approver) (s csr.Signer, caBundle []byte)
	// Approver, when set, returns an Approver that approves every request.
	// When nil, the suite uses one whose Approve returns nil, which suits
	// signers that act on the Approver's answer.
	Approver func(t *testing.T) csr.Approver
	// Denier, when set, returns an Approver that denies every request.
	// When nil, the suite uses one whose Approve returns a *csr.DeniedError.
	Denier func(t *testing.T) csr.Approver
	// MaxLifetime is the longest lifetime the Signer issues, when it is
	// shorter than the two hours the suite asks for; zero means no such cap.
	MaxLifetime time.Duration
	// Parallel lets the suite's tests run in parallel with each other.
	Parallel bool
}

const (
	// SignTimeout bounds every Sign the suite makes.
	SignTimeout = time.Minute
	// ConcurrentSigns is how many different CSRs the suite signs at once.
	ConcurrentSigns = 5
	// MaxBackdate is how far before the time of signing a certificate's
	// NotBefore may lie, as Kubernetes' signer backdates it.
	MaxBackdate = 5 * time.Minute
	// LifetimeSlack is how far NotAfter may lie from the requested end.
	LifetimeSlack = 10 * time.Minute
)

// RunSigner checks that the Signer made by h.New meets the csr.Signer
// contract.
func RunSigner(t *testing.T, h SignerHarness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("csrtest: SignerHarness.New is required")
	}
	t.Run("SignIssuesClientCertificate", func(t *testing.T) {
		parallel(t, h.Parallel)
		for _, alg := range []keys.Algorithm{keys.Ed25519, keys.ECDSAP256} {
			t.Run(alg.String(), func(t *testing.T) {
				parallel(t, h.Parallel)
				s, ca := h.New(t, h.approver(t))
				r := csr.Request{CSR: newRequest(t, alg)}
				before := time.Now()
				chain, err := sign(t, s, r)
				require.NoError(t, err)
				requireIssued(t, chain, ca, r, before)
			})
		}
	})
	t.Run("SignHonoursLifetime", func(t *testing.T) {
		parallel(t, h.Parallel)
		for _, c := range []struct {
			name     string
			lifetime time.Duration
		}{
			{"1h", time.Hour},
			{"2h", 2 * time.Hour},
		} {
			t.Run(c.name, func(t *testing.T) {
				parallel(t, h.Parallel)
				s, ca := h.New(t, h.approver(t))
				req := newRequest(t, keys.Ed25519)
				want := c.lifetime
				if h.MaxLifetime > 0 && h.MaxLifetime < want {
					want = h.MaxLifetime
				}
				r := csr.Request{CSR: req, Lifetime: c.lifetime}
				before := time.Now()
				chain, err := sign(t, s, r)
				after := time.Now()
				require.NoError(t, err)
				leaf := requireIssued(t, chain, ca, r, before)

				require.LessOrEqual(t, leaf.NotAfter.Sub(leaf.NotBefore), want+MaxBackdate,
					"validity from %s to %s", leaf.NotBefore, leaf.NotAfter)
				earliest := before.Add(want - LifetimeSlack).Truncate(time.Second)
				latest := after.Add(want + LifetimeSlack)
				require.False(t, leaf.NotAfter.Before(earliest), "NotAfter %s before %s", leaf.NotAfter, earliest)
				require.False(t, leaf.NotAfter.After(latest), "NotAfter %s after %s", leaf.NotAfter, latest)
			})
		}
	})
	t.Run("SignSameRequestTwice", func(t *testing.T) {
		parallel(t, h.Parallel)
		s, ca := h.New(t, h.approver(t))
		r := csr.Request{CSR: newRequest(t, keys.Ed25519)}
		for i := range 2 {
			before := time.Now()
			chain, err := sign(t, s, r)
			require.NoError(t, err, "Sign %d", i+1)
			requireIssued(t, chain, ca, r, before)
		}
	})
	t.Run("ConcurrentSign", func(t *testing.T) {
		parallel(t, h.Parallel)
		s, ca := h.New(t, h.approver(t))
		var (
			start  = make(chan struct{})
			wg     sync.WaitGroup
			reqs   [ConcurrentSigns]*csr.Checked
			chains [ConcurrentSigns][]byte
			errs   [ConcurrentSigns]error
		)
		for i := range reqs {
			reqs[i] = newRequest(t, keys.Ed25519)
		}
		ctx, cancel := context.WithTimeout(t.Context(), SignTimeout)
		defer cancel()
		before := time.Now()
		for i := range reqs {
			wg.Go(func() {
				<-start
				chains[i], errs[i] = s.Sign(ctx, csr.Request{CSR: reqs[i]})
			})
		}
		close(start)
		wg.Wait()
		for i := range reqs {
			require.NoError(t, errs[i], "Sign %d", i)
			requireIssued(t, chains[i], ca, csr.Request{CSR: reqs[i]}, before)
		}
	})
	t.Run("DeniedRequest", func(t *testing.T) {
		parallel(t, h.Parallel)
		s, _ := h.New(t, h.denier(t))
		_, err := sign(t, s, csr.Request{CSR: newRequest(t, keys.Ed25519)})
		var denied *csr.DeniedError
		require.True(t, errors.As(err, &denied), "got %v, want an error wrapping a *csr.DeniedError", err)
	})
	t.Run("CancelledContext", func(t *testing.T) {
		parallel(t, h.Parallel)
		s, _ := h.New(t, h.approver(t))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := s.Sign(ctx, csr.Request{CSR: newRequest(t, keys.Ed25519)})
		require.True(t, errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded),
			"got %v, want an error wrapping context.Canceled or context.DeadlineExceeded", err)
	})
}

func (h SignerHarness) approver(t *testing.T) csr.Approver {
	if h.Approver != nil {
		return h.Approver(t)
	}
	return approveAll{}
}

func (h SignerHarness) denier(t *testing.T) csr.Approver {
	if h.Denier != nil {
		return h.Denier(t)
	}
	return denyAll{}
}

type approveAll struct{}

func (approveAll) Approve(ctx context.Context, _ string, _ *csr.Checked) error { return ctx.Err() }

type denyAll struct{}

func (denyAll) Approve(ctx context.Context, name string, _ *csr.Checked) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return &csr.DeniedError{Name: name, Reason: "ConformanceTest", Message: "csrtest denies every request"}
}

func sign(t *testing.T, s csr.Signer, r csr.Request) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), SignTimeout)
	defer cancel()
	return s.Sign(ctx, r)
}

// requireIssued checks that chain is a PEM chain whose leaf is a client
// certificate for r's CSR, not a CA, that chains to caBundle, is valid now
// and passes csr.CheckIssued for r asked at before. It returns the leaf.
func requireIssued(t *testing.T, chain, caBundle []byte, r csr.Request, before time.Time) *x509.Certificate {
	t.Helper()
	c := r.CSR
	var certs []*x509.Certificate
	for rest := chain; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		require.Equal(t, "CERTIFICATE", block.Type, "PEM block %d of the chain", len(certs))
		cert, err := x509.ParseCertificate(block.Bytes)
		require.NoError(t, err, "certificate %d of the chain", len(certs))
		certs = append(certs, cert)
	}
	require.NotEmpty(t, certs, "Sign returned no PEM certificate")
	leaf := certs[0]

	require.Equal(t, c.Subject().CommonName, leaf.Subject.CommonName, "common name")
	require.Equal(t, c.Subject().Organization, leaf.Subject.Organization, "organizations")
	require.True(t, keys.Equal(c.PublicKey(), leaf.PublicKey), "certificate for key %s, want %s",
		keys.Fingerprint(leaf.PublicKey), keys.Fingerprint(c.PublicKey()))
	require.False(t, leaf.IsCA, "a signer issued a CA certificate")
	require.True(t, slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageClientAuth), "extended key usages %v lack client auth", leaf.ExtKeyUsage)

	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(caBundle), "the harness's CA bundle holds no PEM certificate")
	intermediates := x509.NewCertPool()
	for _, cert := range certs[1:] {
		intermediates.AddCert(cert)
	}
	_, err := leaf.Verify(x509.VerifyOptions{
		Roots:         roots,
		Intermediates: intermediates,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	require.NoError(t, err, "verifying the certificate against the CA bundle")
	_, err = csr.CheckIssued(chain, r, before)
	require.NoError(t, err, "csr.CheckIssued")
	return leaf
}
