package kube_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/kube"
)

// TestCSRSignerRenewsWithinTheHour: signing the same CSR again once its
// certificate is due for renewal gets a new certificate, even while the
// object that issued the first one still exists (the API server collects
// issued objects after an hour, and the shortest lifetime, ten minutes, is
// due after five).
func TestCSRSignerRenewsWithinTheHour(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	clk := clocktesting.NewFakePassiveClock(time.Now())
	signer := kube.NewCSRSignerWithOptions(providerEnv.client, kube.NewApprover(providerEnv.client), &kube.CSRSignerOptions{Clock: clk})
	r := csr.Request{CSR: checkedCSR(t, shortName(t.Name(), 40)), Lifetime: 10 * time.Minute}

	first, err := signer.Sign(ctx, r)
	require.NoError(t, err)
	again, err := signer.Sign(ctx, r)
	require.NoError(t, err)
	require.Equal(t, first, again, "before the renewal point the issued object is re-used")

	cert, err := csr.ParseCertificate(first)
	require.NoError(t, err)
	clk.SetTime(csr.RenewAt(cert).Add(time.Second))
	renewed, err := signer.Sign(ctx, r)
	require.NoError(t, err)
	require.NotEqual(t, first, renewed, "a renewal gets a new certificate")
	leaf, err := csr.ParseCertificate(renewed)
	require.NoError(t, err)
	require.NotEqual(t, cert.SerialNumber, leaf.SerialNumber)
}
