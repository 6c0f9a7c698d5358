package enrol_test

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/keys"
)

func pemDecode(b []byte) ([]byte, []byte) {
	block, rest := pem.Decode(b)
	if block == nil {
		return nil, rest
	}
	return block.Bytes, rest
}

// servingCertificate is an endpoint certificate issued by key at now.
func servingCertificate(t testing.TB, key *keys.PrivateKey, now time.Time, lifetime time.Duration) *x509.Certificate {
	t.Helper()
	certPEM, err := enrol.ServingCertificate(nil, key, providerID, generate(t).Public(), []string{"enrolment.example"}, now, lifetime)
	require.NoError(t, err)
	der, rest := pemDecode(certPEM)
	require.NotNil(t, der)
	require.Empty(t, rest)
	c, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return c
}

func TestServingCertificate(t *testing.T) {
	t.Parallel()
	enrolment, other := generate(t), generate(t)
	now := time.Now()
	c := servingCertificate(t, enrolment, now, time.Hour)
	assert.Equal(t, []string{"enrolment.example"}, c.DNSNames)
	assert.Equal(t, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, c.ExtKeyUsage)
	assert.False(t, c.IsCA)
	committed := []crypto.PublicKey{other.Public(), enrolment.Public()}

	for _, tc := range []struct {
		name string
		keys []crypto.PublicKey
		at   time.Time
		ok   bool
	}{
		{"issued by a committed key", committed, now, true},
		{"issued by the first committed key", []crypto.PublicKey{enrolment.Public()}, now.Add(59 * time.Minute), true},
		{"no committed key issued it", []crypto.PublicKey{other.Public()}, now, false},
		{"no key committed", nil, now, false},
		{"expired", committed, now.Add(time.Hour + time.Second), false},
		{"not yet valid", committed, now.Add(-2 * time.Minute), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := enrol.VerifyServingCertificate(c.Raw, tc.keys, tc.at)
			if tc.ok {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, enrol.ErrEndpointCertificate)
			}
		})
	}
	t.Run("not DER", func(t *testing.T) {
		t.Parallel()
		assert.ErrorIs(t, enrol.VerifyServingCertificate([]byte("junk"), committed, now), enrol.ErrEndpointCertificate)
	})
	t.Run("self-signed by its own key", func(t *testing.T) {
		t.Parallel()
		// A certificate for the enrolment key's public key, issued by
		// another key, is not one the enrolment key issued.
		certPEM, err := enrol.ServingCertificate(nil, other, providerID, enrolment.Public(), nil, now, time.Hour)
		require.NoError(t, err)
		der, _ := pemDecode(certPEM)
		assert.ErrorIs(t, enrol.VerifyServingCertificate(der, []crypto.PublicKey{enrolment.Public()}, now), enrol.ErrEndpointCertificate)
	})
	t.Run("not for serving", func(t *testing.T) {
		t.Parallel()
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(1), NotBefore: now.Add(-time.Minute), NotAfter: now.Add(time.Hour),
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		der, err := x509.CreateCertificate(nil, tmpl, &x509.Certificate{}, other.Public(), enrolment)
		require.NoError(t, err)
		assert.ErrorIs(t, enrol.VerifyServingCertificate(der, committed, now), enrol.ErrEndpointCertificate)
	})
}
