package controllers_test

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/tenant"
)

// TestHandshakesInFlightAreBounded runs a provider with 2 workers: a third
// consumer's nonce waits until one of the first two handshakes is settled,
// accepted or refused, so that the first consumers of a burst finish first.
func TestHandshakesInFlightAreBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pc := newBenchClients(t, providerEnv)
	providerID := benchID("cl-gp")
	a, b, c, d := benchID("cl-ga"), benchID("cl-gb"), benchID("cl-gc"), benchID("cl-gd")
	stop := startBenchManager(t, providerEnv, nil, false, providerSetup(providerID, nil, 2), providerKinds...)
	defer func() {
		stop()
		discardTenants(ctx, t, pc, []string{a, b, c, d})
	}()

	nonces := benchRequestNonces(ctx, t, pc, []string{a, b})
	issued := func(id string) func() bool {
		return func() bool {
			s, err := pc.core.CoreV1().Secrets(clusterid.TenantNamespace(id)).Get(ctx, nonce.SecretName, metav1.GetOptions{})
			require.NoError(t, err)
			return len(s.Data[nonce.SecretKey]) > 0
		}
	}
	key, err := keys.Generate(rand.Reader, keys.Ed25519)
	require.NoError(t, err)

	require.NoError(t, benchRequestNonce(ctx, t, pc, c))
	require.Never(t, issued(c), 2*time.Second, 100*time.Millisecond, "a third nonce issued while two handshakes are in flight")
	accepted, err := tenant.Build(a, key, nonces[a], nil)
	require.NoError(t, err)
	require.NoError(t, pc.client.Create(ctx, accepted))
	require.Eventually(t, issued(c), time.Minute, 50*time.Millisecond, "the third nonce, once the first Tenant is accepted")
	awaitEvents(ctx, t, pc.core, contract.ReasonTenantAccepted, map[string]string{clusterid.TenantNamespace(a): a})

	require.NoError(t, benchRequestNonce(ctx, t, pc, d))
	require.Never(t, issued(d), 2*time.Second, 100*time.Millisecond, "a fourth nonce issued while two handshakes are in flight")
	other, err := nonce.Generate(rand.Reader)
	require.NoError(t, err)
	refused, err := tenant.Build(b, key, other, nil) // signed over a nonce the provider never issued
	require.NoError(t, err)
	require.NoError(t, pc.client.Create(ctx, refused))
	require.Eventually(t, issued(d), time.Minute, 50*time.Millisecond, "the fourth nonce, once the second Tenant is refused")
	awaitEvents(ctx, t, pc.core, contract.ReasonTranscriptRejected, map[string]string{clusterid.TenantNamespace(b): b})
}
