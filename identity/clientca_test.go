package identity_test

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
)

// rawCA is a CA that signs certificates made from any template, to build
// what no well-behaved signer issues.
type rawCA struct {
	pem  []byte
	cert *x509.Certificate
	key  crypto.Signer
}

func newRawCA(t *testing.T, name string) rawCA {
	t.Helper()
	caPEM, caKey, err := csr.GenerateCA(nil, name, epoch, 10*365*24*time.Hour)
	require.NoError(t, err)
	cert, err := csr.ParseCertificate(caPEM)
	require.NoError(t, err)
	return rawCA{pem: caPEM, cert: cert, key: caKey}
}

func (ca rawCA) pool(t *testing.T) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	require.True(t, p.AppendCertsFromPEM(ca.pem))
	return p
}

// sign issues a certificate for pub from tmpl, valid an hour around epoch,
// with the ControlPlane subject of consumerID and client-auth usage unless
// tmpl says otherwise.
func (ca rawCA) sign(t *testing.T, pub crypto.PublicKey, edit func(*x509.Certificate)) []byte {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      csr.ControlPlaneSubject(consumerID),
		NotBefore:    epoch.Add(-time.Minute),
		NotAfter:     epoch.Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if edit != nil {
		edit(tmpl)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, pub, ca.key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func identityWith(t *testing.T, ca, cert []byte) *authv1beta1.Identity {
	t.Helper()
	id, err := identity.Build(providerID, authv1beta1.AuthParams{
		CA: ca, SignedCRT: cert, APIServer: "https://provider.example:6443",
	}, nil)
	require.NoError(t, err)
	return id
}

// TestVerifyLiqoIdentities accepts the Identities Liqo providers hand out
// whose certificate does not chain to spec.authParams.ca: signed by a
// client CA that is not the serving CA (k3s, RKE2), or with an empty CA (a
// provider configured with --trusted-ca).
func TestVerifyLiqoIdentities(t *testing.T) {
	t.Parallel()
	key, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	serving, client := newRawCA(t, "serving-ca"), newRawCA(t, "client-ca")
	cert := client.sign(t, key.Public(), nil)
	tests := []struct {
		name string
		ca   []byte
	}{
		{"serving CA is not the client CA", serving.pem},
		{"empty CA", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id := identityWith(t, tt.ca, cert)
			for name, opts := range map[string]*identity.VerifyOptions{
				"no client CA":        nil,
				"no client CA pool":   {},
				"the right client CA": {ClientCAs: client.pool(t)},
			} {
				got, err := identity.Verify(id, consumerID, key.Public(), epoch, opts)
				require.NoError(t, err, name)
				require.Equal(t, consumerID, got.Subject.CommonName)
			}
			_, err := identity.Verify(id, consumerID, key.Public(), epoch, &identity.VerifyOptions{ClientCAs: serving.pool(t)})
			require.ErrorIs(t, err, identity.ErrUntrusted)
		})
	}
}

// TestVerifyOfflineRejects refuses, without any client CA, every certificate
// the consumer can tell is wrong from the Identity alone.
func TestVerifyOfflineRejects(t *testing.T) {
	t.Parallel()
	key, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	other, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	client := newRawCA(t, "client-ca")
	tests := []struct {
		name string
		pub  crypto.PublicKey
		edit func(*x509.Certificate)
		want error
	}{
		{"CA certificate", key.Public(), func(c *x509.Certificate) {
			c.IsCA, c.BasicConstraintsValid = true, true
			c.KeyUsage |= x509.KeyUsageCertSign
		}, identity.ErrCACertificate},
		{"server-auth only", key.Public(), func(c *x509.Certificate) {
			c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		}, identity.ErrKeyUsage},
		{"code signing only", key.Public(), func(c *x509.Certificate) {
			c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}
		}, identity.ErrKeyUsage},
		{"unknown extended key usage only", key.Public(), func(c *x509.Certificate) {
			c.ExtKeyUsage, c.UnknownExtKeyUsage = nil, []asn1.ObjectIdentifier{{1, 2, 3, 4}}
		}, identity.ErrKeyUsage},
		{"another CN", key.Public(), func(c *x509.Certificate) {
			c.Subject = csr.ControlPlaneSubject("cl-someone-else")
		}, identity.ErrSubject},
		{"another O", key.Public(), func(c *x509.Certificate) {
			c.Subject = pkix.Name{CommonName: consumerID, Organization: []string{"system:masters"}}
		}, identity.ErrSubject},
		{"an extra O", key.Public(), func(c *x509.Certificate) {
			c.Subject.Organization = append(c.Subject.Organization, "system:masters")
		}, identity.ErrSubject},
		{"no O", key.Public(), func(c *x509.Certificate) {
			c.Subject.Organization = nil
		}, identity.ErrSubject},
		{"another key", other.Public(), nil, identity.ErrKeyMismatch},
		{"expired", key.Public(), func(c *x509.Certificate) {
			c.NotBefore, c.NotAfter = epoch.Add(-2*time.Hour), epoch.Add(-time.Hour)
		}, identity.ErrExpired},
		{"not yet valid", key.Public(), func(c *x509.Certificate) {
			c.NotBefore, c.NotAfter = epoch.Add(time.Hour), epoch.Add(2*time.Hour)
		}, identity.ErrNotYetValid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, ca := range [][]byte{nil, client.pem} {
				id := identityWith(t, ca, client.sign(t, tt.pub, tt.edit))
				_, err := identity.Verify(id, consumerID, key.Public(), epoch, nil)
				require.ErrorIs(t, err, tt.want)
				_, err = identity.Verify(id, consumerID, key.Public(), epoch, &identity.VerifyOptions{ClientCAs: client.pool(t)})
				require.ErrorIs(t, err, tt.want)
			}
		})
	}
}

// TestVerifyExtKeyUsage accepts what the API server accepts for client
// authentication: client auth, any usage, or no extended key usage at all.
func TestVerifyExtKeyUsage(t *testing.T) {
	t.Parallel()
	key, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	client := newRawCA(t, "client-ca")
	for name, usages := range map[string][]x509.ExtKeyUsage{
		"client auth":            {x509.ExtKeyUsageClientAuth},
		"client and server auth": {x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		"any":                    {x509.ExtKeyUsageAny},
		"none":                   nil,
	} {
		id := identityWith(t, nil, client.sign(t, key.Public(), func(c *x509.Certificate) { c.ExtKeyUsage = usages }))
		_, err := identity.Verify(id, consumerID, key.Public(), epoch, &identity.VerifyOptions{ClientCAs: client.pool(t)})
		require.NoError(t, err, name)
	}
}

// TestBuildWithoutCA builds the Identity of a provider whose API server has
// a publicly trusted certificate.
func TestBuildWithoutCA(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, ca := range [][]byte{nil, {}} {
		id := identityWith(t, ca, f.cert)
		require.Empty(t, id.Spec.AuthParams.CA)
		_, err := identity.Verify(id, consumerID, f.key.Public(), epoch, nil)
		require.NoError(t, err)
	}
}
