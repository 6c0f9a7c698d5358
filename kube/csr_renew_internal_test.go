package kube

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRenewDue covers which issued CertificateSigningRequests a renewal
// re-uses, including those of a signer that backdates certificates past
// their re-signing point (csr.RenewAt): the kube-controller-manager with a
// --cluster-signing-duration under 10 minutes issues certificates already
// past their renewal point, and re-signing on each of them made a new
// object on every reconcile.
func TestRenewDue(t *testing.T) {
	issued := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	// As the kube-controller-manager signs with a 90 second duration:
	// backdated 5 minutes, renewal point (half to two thirds of 6m30s in)
	// 105 to 40 seconds before it was issued.
	backdated := certificatePEM(t, issued.Add(-5*time.Minute), issued.Add(90*time.Second))
	// As it signs with a year: renewal point months after it was issued.
	normal := certificatePEM(t, issued.Add(-5*time.Minute), issued.Add(365*24*time.Hour))

	for _, tc := range []struct {
		name    string
		cert    []byte
		created time.Time
		now     time.Time
		due     bool
	}{
		{"not issued", nil, issued, issued.Add(time.Hour), false},
		{"fresh", normal, issued, issued.Add(time.Hour), false},
		{"past its renewal point", normal, issued, issued.Add(300 * 24 * time.Hour), true},
		{"backdated past its renewal point, just issued", backdated, issued, issued.Add(time.Second), false},
		{"backdated, until it expires", backdated, issued, issued.Add(89 * time.Second), false},
		{"backdated, expired", backdated, issued, issued.Add(90 * time.Second), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &certificatesv1.CertificateSigningRequest{
				ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(tc.created)},
				Status:     certificatesv1.CertificateSigningRequestStatus{Certificate: tc.cert},
			}
			require.Equal(t, tc.due, renewDue(obj, tc.now))
		})
	}
}

func certificatePEM(t *testing.T, notBefore, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "cl-consumer", Organization: []string{"liqo.io"}},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
