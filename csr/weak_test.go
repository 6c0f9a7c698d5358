package csr_test

import (
	"crypto/x509"
	"encoding/pem"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/internal/weakkeys"
	"github.com/kubepact/kubepact/keys"
)

// A CSR for the neutral point carries a self-signature nobody made, and it
// verifies. It is refused for its key, whether or not the policy names an
// expected key (with a transcript, the CSR may be for a key other than the
// cluster key).
func TestCheckRefusesSmallOrderKeys(t *testing.T) {
	t.Parallel()
	points, _ := weakkeys.SmallOrder()
	der, err := x509.CreateCertificateRequest(nil, &x509.CertificateRequest{Subject: csr.ControlPlaneSubject("cl-consumer")},
		weakkeys.NewSigner(points[0]))
	require.NoError(t, err, "the forged self-signature verifies")
	req := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})

	for _, policy := range []csr.Policy{
		csr.ControlPlanePolicy("cl-consumer", nil),
		csr.ControlPlanePolicy("cl-consumer", weakkeys.NewSigner(points[0]).Public()),
	} {
		checked, err := csr.Check(req, policy)
		require.Nil(t, checked)
		require.ErrorIs(t, err, keys.ErrWeakKey)
	}
}
