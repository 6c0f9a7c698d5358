package identity_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/internal/weakkeys"
	"github.com/kubepact/kubepact/keys"
)

// An Identity whose certificate is for a key of small order is refused as
// such, whatever the consumer's own key.
func TestVerifyRefusesSmallOrderCertificateKey(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	caPub, caKey, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: epoch.Add(-time.Hour), NotAfter: epoch.Add(time.Hour)}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caPub, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	points, _ := weakkeys.SmallOrder()
	for _, pub := range points {
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: consumerID, Organization: []string{"liqo.io"}},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
			NotBefore: epoch.Add(-time.Minute), NotAfter: epoch.Add(time.Hour)}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, ed25519.PublicKey(pub), caKey)
		require.NoError(t, err)
		id := f.identity(t)
		id.Spec.AuthParams.CA = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
		id.Spec.AuthParams.SignedCRT = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		_, err = identity.Verify(id, consumerID, f.key.Public(), epoch, nil)
		require.ErrorIs(t, err, keys.ErrWeakKey)
	}
}
