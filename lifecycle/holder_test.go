package lifecycle_test

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/lifecycle"
)

// TestCheckHolder: who holds a consumer ID's live certificates, and who is
// refused.
func TestCheckHolder(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	_, caKey, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), KeyUsage: x509.KeyUsageCertSign}
	newKey := func() crypto.Signer {
		_, k, err := ed25519.GenerateKey(rand.Reader)
		require.NoError(t, err)
		return k
	}
	certFor := func(k crypto.Signer, notAfter time.Time) []byte {
		der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "cl-c"},
			NotBefore: now.Add(-time.Hour), NotAfter: notAfter}, ca, k.Public(), caKey)
		require.NoError(t, err)
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	}
	csrFor := func(k crypto.Signer) []byte {
		der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "cl-c"}}, k)
		require.NoError(t, err)
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	}
	tenantOf := func(cluster, tls crypto.Signer, notAfter time.Time) *authv1beta1.Tenant {
		pub, err := keys.MarshalPublicKey(cluster.Public())
		require.NoError(t, err)
		return &authv1beta1.Tenant{
			Spec:   authv1beta1.TenantSpec{ClusterID: "cl-c", PublicKey: pub, CSR: csrFor(tls)},
			Status: authv1beta1.TenantStatus{AuthParams: &authv1beta1.AuthParams{SignedCRT: certFor(tls, notAfter)}},
		}
	}
	clusterKey, tlsKey, fresh, other := newKey(), newKey(), newKey(), newKey()
	live, expired := now.Add(time.Hour), now.Add(-time.Minute)

	for _, c := range []struct {
		name   string
		stored *authv1beta1.Tenant
		cached *csr.CacheEntry
		claim  []crypto.PublicKey
		held   bool
		flow   lifecycle.Flow
	}{
		{name: "nothing issued", claim: []crypto.PublicKey{other.Public()}},
		{name: "the holder retries", stored: tenantOf(clusterKey, clusterKey, live),
			claim: []crypto.PublicKey{clusterKey.Public()}},
		{name: "the same cluster key, a fresh TLS key", stored: tenantOf(clusterKey, tlsKey, live),
			cached: &csr.CacheEntry{CSR: csrFor(tlsKey), Certificate: certFor(tlsKey, live)},
			claim:  []crypto.PublicKey{clusterKey.Public(), fresh.Public()}},
		{name: "another key over a live Tenant", stored: tenantOf(clusterKey, clusterKey, live),
			claim: []crypto.PublicKey{other.Public()}, held: true, flow: lifecycle.FlowHandshake},
		{name: "another key over an expired Tenant", stored: tenantOf(clusterKey, clusterKey, expired),
			claim: []crypto.PublicKey{other.Public()}},
		{name: "another key over a cached certificate no Tenant records",
			cached: &csr.CacheEntry{CSR: csrFor(tlsKey), Certificate: certFor(tlsKey, live)},
			claim:  []crypto.PublicKey{other.Public()}, held: true, flow: lifecycle.FlowUnrecorded},
		{name: "another key over an expired cached certificate",
			cached: &csr.CacheEntry{CSR: csrFor(tlsKey), Certificate: certFor(tlsKey, expired)},
			claim:  []crypto.PublicKey{other.Public()}},
		{name: "the cached certificate's own key",
			cached: &csr.CacheEntry{CSR: csrFor(tlsKey), Certificate: certFor(tlsKey, live)},
			claim:  []crypto.PublicKey{tlsKey.Public()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := lifecycle.CheckHolder("cl-c", c.stored, c.cached, c.claim, now)
			if !c.held {
				require.NoError(t, err)
				return
			}
			var held *lifecycle.HeldError
			require.ErrorAs(t, err, &held)
			require.ErrorIs(t, err, lifecycle.ErrIdentityHeld)
			require.Equal(t, "cl-c", held.ConsumerID)
			require.Equal(t, c.flow, held.Flow)
			require.True(t, held.NotAfter.After(now))
		})
	}
}
