package identitytest

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kubeconfig"
)

// ReviewerHarness tells RunReviewer how to reach the API server under test.
type ReviewerHarness struct {
	// New returns the Reviewer under test. Required.
	New func(t *testing.T) identity.Reviewer
	// Server is the URL of the API server. Required.
	Server string
	// CA is the PEM CA of the server's serving certificate, written in the
	// kubeconfigs under review; empty when New's Reviewer trusts the server
	// otherwise.
	CA []byte
	// ClientCA and ClientCAKey are a CA the server trusts for client
	// certificates (PEM certificate and key). Required.
	ClientCA    []byte
	ClientCAKey crypto.Signer
	// Now is the server's time; nil means time.Now.
	Now func() time.Time
	// Parallel runs the tests in parallel.
	Parallel bool
}

// RunReviewer checks the contract written on identity.Reviewer against an
// API server that authenticates client certificates:
//
//   - a certificate signed by a client CA of the server, valid now,
//     authenticates as its CN, with its O values among the groups;
//   - a certificate signed by a CA the server does not trust, or expired,
//     is refused with an error wrapping identity.ErrRejected;
//   - a review with a cancelled context fails, without
//     identity.ErrRejected.
func RunReviewer(t *testing.T, h ReviewerHarness) {
	if h.New == nil || h.Server == "" || len(h.ClientCA) == 0 || h.ClientCAKey == nil {
		t.Fatal("identitytest: ReviewerHarness needs New, Server, ClientCA and ClientCAKey")
	}
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	trusted, err := csr.ParseCertificate(h.ClientCA)
	require.NoError(t, err)
	unknownPEM, unknownKey, err := csr.GenerateCA(nil, "identitytest-unknown-ca", now().Add(-time.Hour), 24*time.Hour)
	require.NoError(t, err)
	unknown, err := csr.ParseCertificate(unknownPEM)
	require.NoError(t, err)

	kubeconfigFor := func(t *testing.T, ca *x509.Certificate, caKey crypto.Signer, subject pkix.Name, notAfter time.Time) *kubeconfig.Config {
		t.Helper()
		key, err := keys.Generate(nil, keys.ECDSAP256)
		require.NoError(t, err)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(now().UnixNano()),
			Subject:      subject,
			NotBefore:    now().Add(-2 * time.Hour),
			NotAfter:     notAfter,
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
		require.NoError(t, err)
		cfg, err := kubeconfig.Build(kubeconfig.Params{
			Name:        "identitytest",
			Server:      h.Server,
			CA:          h.CA,
			Certificate: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			Key:         key,
		})
		require.NoError(t, err)
		return cfg
	}

	t.Run("trusted certificate", func(t *testing.T) {
		h.parallelReview(t)
		for _, subject := range []pkix.Name{
			{CommonName: "cl-identitytest", Organization: []string{"liqo.io"}},
			{CommonName: "cl-identitytest-2", Organization: []string{"liqo.io", "other.io"}},
			{CommonName: "cl-identitytest-3"},
		} {
			cfg := kubeconfigFor(t, trusted, h.ClientCAKey, subject, now().Add(time.Hour))
			user, groups, err := h.New(t).Review(t.Context(), cfg)
			require.NoError(t, err)
			require.Equal(t, subject.CommonName, user)
			require.Subset(t, groups, subject.Organization)
		}
	})
	t.Run("untrusted certificate", func(t *testing.T) {
		h.parallelReview(t)
		cfg := kubeconfigFor(t, unknown, unknownKey, csr.ControlPlaneSubject("cl-identitytest"), now().Add(time.Hour))
		_, _, err := h.New(t).Review(t.Context(), cfg)
		require.ErrorIs(t, err, identity.ErrRejected)
	})
	t.Run("expired certificate", func(t *testing.T) {
		h.parallelReview(t)
		cfg := kubeconfigFor(t, trusted, h.ClientCAKey, csr.ControlPlaneSubject("cl-identitytest"), now().Add(-time.Hour))
		_, _, err := h.New(t).Review(t.Context(), cfg)
		require.ErrorIs(t, err, identity.ErrRejected)
	})
	t.Run("cancelled context", func(t *testing.T) {
		h.parallelReview(t)
		cfg := kubeconfigFor(t, trusted, h.ClientCAKey, csr.ControlPlaneSubject("cl-identitytest"), now().Add(time.Hour))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, _, err := h.New(t).Review(ctx, cfg)
		require.Error(t, err)
		require.True(t, errors.Is(err, context.Canceled), "error %v wraps context.Canceled", err)
		require.NotErrorIs(t, err, identity.ErrRejected)
	})
}

func (h ReviewerHarness) parallelReview(t *testing.T) {
	if h.Parallel {
		t.Parallel()
	}
}
