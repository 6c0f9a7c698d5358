package csr_test

import (
	"crypto/ed25519"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/csr"
)

// burst returns n client certificates, as PEM, issued by one CA in the same
// instant for n consumers, each living lifetime from five minutes before
// epoch, as a LocalCA or the Kubernetes CSR API backdates them. Keys and
// serials come from seeds, so the certificates are the same on every run.
func burst(t *testing.T, n int, lifetime time.Duration) [][]byte {
	t.Helper()
	seed := func(i int) []byte {
		s := make([]byte, ed25519.SeedSize)
		binary.BigEndian.PutUint64(s, uint64(i))
		return s
	}
	caKey := ed25519.NewKeyFromSeed(seed(1 << 40))
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "provider-ca"}}
	out := make([][]byte, n)
	for i := range out {
		key := ed25519.NewKeyFromSeed(seed(i))
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(int64(i) + 2),
			Subject:      pkix.Name{CommonName: "cl-consumer-" + big.NewInt(int64(i)).String(), Organization: []string{csr.ControlPlaneOrganization}},
			NotBefore:    epoch.Add(-csr.IssuedSkew),
			NotAfter:     epoch.Add(lifetime),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		der, err := x509.CreateCertificate(nil, tmpl, ca, key.Public(), caKey)
		require.NoError(t, err)
		out[i] = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	}
	return out
}

func TestRenewAtInTheWindow(t *testing.T) {
	t.Parallel()
	for _, lifetime := range []time.Duration{10 * time.Minute, 7 * 24 * time.Hour, 365 * 24 * time.Hour} {
		for _, p := range burst(t, 300, lifetime) {
			cert := parseCert(t, p)
			life := cert.NotAfter.Sub(cert.NotBefore)
			at := csr.RenewAt(cert)
			require.False(t, at.Before(cert.NotBefore.Add(life/2)), "not before half the lifetime")
			require.True(t, at.Before(cert.NotBefore.Add(life-life/3)), "before two thirds, where Liqo re-signs")
			f := csr.RenewFraction(cert)
			require.GreaterOrEqual(t, f, csr.MinRenewFraction)
			require.Less(t, f, csr.MaxRenewFraction)
			require.InDelta(t, float64(at.Sub(cert.NotBefore))/float64(life), f, 1e-12)
		}
	}
}

// A provider that restarts, or another replica, reads the certificate
// again from the Tenant's status or its cache: the schedule is the same.
func TestRenewAtIsStableForACertificate(t *testing.T) {
	t.Parallel()
	for _, p := range burst(t, 50, time.Hour) {
		first := parseCert(t, p)
		again := parseCert(t, append([]byte(nil), p...))
		require.Equal(t, csr.RenewAt(first), csr.RenewAt(again))
		fromDER, err := x509.ParseCertificate(first.Raw)
		require.NoError(t, err)
		require.Equal(t, csr.RenewAt(first), csr.RenewAt(fromDER))
	}
}

// A burst of 1,000 certificates, which Liqo's providers all re-sign at the
// same instant, is re-signed over the whole window, evenly: with the
// shortest lifetime the CSR API issues (10 minutes, plus 5 backdated), no
// second holds more than 2 % of the re-signs, and each tenth of the window
// between 5 % and 15 %.
func TestRenewAtSpreadsABurst(t *testing.T) {
	t.Parallel()
	const n = 1000
	pems := burst(t, n, 10*time.Minute)
	certs := make([]*x509.Certificate, n)
	perSecond := map[int64]int{}
	perTenth := make([]int, 10)
	for i, p := range pems {
		certs[i] = parseCert(t, p)
		perSecond[csr.RenewAt(certs[i]).Unix()]++
		tenth := int((csr.RenewFraction(certs[i]) - csr.MinRenewFraction) / (csr.MaxRenewFraction - csr.MinRenewFraction) * 10)
		perTenth[tenth]++
	}
	window := csr.MaxRenewFraction - csr.MinRenewFraction
	require.Greater(t, csr.RenewSpread(certs), 0.98*window, "the burst uses the whole window")
	require.LessOrEqual(t, csr.RenewSpread(certs), window)
	busiest := 0
	for _, c := range perSecond {
		busiest = max(busiest, c)
	}
	require.LessOrEqual(t, busiest, n*2/100, "re-signs due in the busiest second")
	for i, c := range perTenth {
		require.True(t, c >= n*5/100 && c <= n*15/100, "tenth %d of the window holds %d re-signs", i, c)
	}
}

func TestRenewSpreadEdges(t *testing.T) {
	t.Parallel()
	cert := parseCert(t, burst(t, 1, time.Hour)[0])
	require.Zero(t, csr.RenewSpread(nil))
	require.Zero(t, csr.RenewSpread([]*x509.Certificate{cert}), "one certificate uses no width")
	require.Zero(t, csr.RenewSpread([]*x509.Certificate{cert, cert}), "the same certificate twice uses none either")
	require.Zero(t, csr.RenewFraction(&x509.Certificate{NotBefore: epoch, NotAfter: epoch}), "no lifetime")
}
