package controllers

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/renewal"
)

func TestRequeueAtRenewal(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	chain := selfSigned(t, now, 30*time.Hour)
	cert, err := csr.ParseCertificate(chain)
	require.NoError(t, err)
	due := renewal.ProviderDeadline(cert)
	require.True(t, !due.Before(now.Add(15*time.Hour)) && due.Before(now.Add(20*time.Hour)), "due between half and two thirds in: %s", due)

	require.Equal(t, due.Sub(now), requeueAtRenewal(chain, now).RequeueAfter, "when it falls due")
	require.Equal(t, time.Hour, requeueAtRenewal(chain, due.Add(-time.Hour)).RequeueAfter)
	require.Equal(t, minRenewalWait, requeueAtRenewal(chain, now.Add(29*time.Hour)).RequeueAfter, "past due: soon, not at once")
	require.Zero(t, requeueAtRenewal([]byte("garbage"), now).RequeueAfter)
}

// selfSigned returns the PEM of a self-signed certificate valid for life
// from notBefore.
func selfSigned(t *testing.T, notBefore time.Time, life time.Duration) []byte {
	t.Helper()
	key, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: notBefore, NotAfter: notBefore.Add(life)}
	der, err := x509.CreateCertificate(nil, tmpl, tmpl, key.Public(), key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestRenewRefusalsAreFinal: a Renew of a consumer that is drained, or
// revoked by a record in force, gets RenewRefused, and is not retried.
func TestRenewRefusalsAreFinal(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		fmt.Errorf("%w: %w", renewal.ErrDrained, lifecycle.ErrDrained),
		&lifecycle.RevokedError{ConsumerID: "cl-consumer", Reason: lifecycle.ReasonRevoked},
	} {
		reason, final := renewReasonOf(err)
		require.Equal(t, contract.ReasonRenewRefused, reason, "%v", err)
		require.True(t, final, "%v", err)
	}
}
