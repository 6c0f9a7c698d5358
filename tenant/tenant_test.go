package tenant_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/internal/testkeys"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/tenant"
)

const consumerID = "cl-consumer"

func mustKey(t *testing.T, alg keys.Algorithm) *keys.PrivateKey {
	t.Helper()
	k, err := keys.Generate(nil, alg)
	require.NoError(t, err)
	return k
}

func mustNonce(t *testing.T) nonce.Nonce {
	t.Helper()
	n, err := nonce.Generate(nil)
	require.NoError(t, err)
	return n
}

func mustCSR(t *testing.T, key crypto.Signer, tmpl *x509.CertificateRequest) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func TestBuildThenVerify(t *testing.T) {
	t.Parallel()
	for _, alg := range []keys.Algorithm{keys.Ed25519, keys.ECDSAP256} {
		t.Run(alg.String(), func(t *testing.T) {
			t.Parallel()
			key := mustKey(t, alg)
			n := mustNonce(t)
			tn, err := tenant.Build(consumerID, key, n, &tenant.BuildOptions{ProxyURL: "http://proxy.example:3128"})
			require.NoError(t, err)

			require.Equal(t, consumerID, tn.Name)
			require.Equal(t, "liqo-tenant-cl-consumer", tn.Namespace)
			require.Equal(t, map[string]string{clusterid.Label: consumerID}, tn.Labels)
			require.Equal(t, authv1beta1.KeysExchange, tn.Spec.AuthzPolicy)
			require.Equal(t, authv1beta1.TenantConditionActive, tn.Spec.TenantCondition)
			require.True(t, strings.HasPrefix(string(tn.Spec.PublicKey), "-----BEGIN PUBLIC KEY-----"))

			v, err := tenant.Verify(tn, n, nil)
			require.NoError(t, err)
			require.Equal(t, consumerID, v.ClusterID)
			require.True(t, keys.Equal(key.Public(), v.PublicKey))
			require.Equal(t, csr.ControlPlaneSubject(consumerID).CommonName, v.CSR.Subject().CommonName)
			require.Equal(t, "http://proxy.example:3128", *v.ProxyURL)
		})
	}
}

func TestVerifyAcceptsRawEd25519PublicKey(t *testing.T) {
	t.Parallel()
	key := mustKey(t, keys.Ed25519)
	n := mustNonce(t)
	tn, err := tenant.Build(consumerID, key, n, nil)
	require.NoError(t, err)
	pub, err := keys.ParsePublicKey(tn.Spec.PublicKey)
	require.NoError(t, err)
	tn.Spec.PublicKey = []byte(pub.(ed25519.PublicKey))
	require.Len(t, tn.Spec.PublicKey, ed25519.PublicKeySize)
	_, err = tenant.Verify(tn, n, nil)
	require.NoError(t, err)
}

func TestBuildRejects(t *testing.T) {
	t.Parallel()
	key := mustKey(t, keys.Ed25519)
	n := mustNonce(t)
	tests := []struct {
		name     string
		id       string
		n        nonce.Nonce
		proxyURL string
		want     error
	}{
		{"uppercase cluster ID", "Cl-Consumer", n, "", clusterid.ErrInvalid},
		{"cluster ID too long", strings.Repeat("a", 52), n, "", clusterid.ErrInvalid},
		{"zero nonce", consumerID, nonce.Nonce{}, "", nonce.ErrMalformed},
		{"socks proxy", consumerID, n, "socks5://proxy:1080", tenant.ErrInvalidProxyURL},
		{"relative proxy", consumerID, n, "proxy:3128", tenant.ErrInvalidProxyURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := tenant.Build(tt.id, key, tt.n, &tenant.BuildOptions{ProxyURL: tt.proxyURL})
			require.ErrorIs(t, err, tt.want)
		})
	}
}

func TestVerifyRejects(t *testing.T) {
	t.Parallel()
	key := mustKey(t, keys.Ed25519)
	other := mustKey(t, keys.Ed25519)
	n := mustNonce(t)
	otherNonce := mustNonce(t)
	p224, err := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	require.NoError(t, err)
	pkixPEM := func(pub crypto.PublicKey) []byte {
		der, err := x509.MarshalPKIXPublicKey(pub)
		require.NoError(t, err)
		return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	}
	subject := csr.ControlPlaneSubject(consumerID)

	tests := []struct {
		name   string
		mutate func(*authv1beta1.Tenant)
		field  string
		want   error
	}{
		{"cluster ID not a DNS-1123 label", func(tn *authv1beta1.Tenant) { tn.Spec.ClusterID = "cl_consumer" }, "spec.clusterID", clusterid.ErrInvalid},
		{"cluster ID of 52 characters", func(tn *authv1beta1.Tenant) { tn.Spec.ClusterID = strings.Repeat("c", 52) }, "spec.clusterID", clusterid.ErrInvalid},
		{"public key not PEM", func(tn *authv1beta1.Tenant) { tn.Spec.PublicKey = []byte("not a key") }, "spec.publicKey", keys.ErrMalformed},
		{"public key truncated", func(tn *authv1beta1.Tenant) { tn.Spec.PublicKey = tn.Spec.PublicKey[:40] }, "spec.publicKey", keys.ErrMalformed},
		{"public key RSA-1024", func(tn *authv1beta1.Tenant) { tn.Spec.PublicKey = pkixPEM(&testkeys.WeakRSA(t).PublicKey) }, "spec.publicKey", keys.ErrWeak},
		{"public key P-224", func(tn *authv1beta1.Tenant) { tn.Spec.PublicKey = pkixPEM(&p224.PublicKey) }, "spec.publicKey", keys.ErrUnsupported},
		{"no signature", func(tn *authv1beta1.Tenant) { tn.Spec.Signature = nil }, "spec.signature", keys.ErrBadSignature},
		{"signature flipped", func(tn *authv1beta1.Tenant) { tn.Spec.Signature[3] ^= 1 }, "spec.signature", keys.ErrBadSignature},
		{"signature truncated", func(tn *authv1beta1.Tenant) { tn.Spec.Signature = tn.Spec.Signature[:32] }, "spec.signature", keys.ErrBadSignature},
		{"signature oversized", func(tn *authv1beta1.Tenant) { tn.Spec.Signature = make([]byte, tenant.MaxSignatureSize+1) }, "spec.signature", keys.ErrBadSignature},
		{"signature by another key", func(tn *authv1beta1.Tenant) {
			tn.Spec.Signature, _ = nonce.Sign(nil, other, n)
		}, "spec.signature", keys.ErrBadSignature},
		{"signature over another nonce", func(tn *authv1beta1.Tenant) {
			tn.Spec.Signature, _ = nonce.Sign(nil, key, otherNonce)
		}, "spec.signature", keys.ErrBadSignature},
		{"no CSR", func(tn *authv1beta1.Tenant) { tn.Spec.CSR = nil }, "spec.csr", csr.ErrMalformed},
		{"CSR truncated", func(tn *authv1beta1.Tenant) { tn.Spec.CSR = tn.Spec.CSR[:100] }, "spec.csr", csr.ErrMalformed},
		{"CSR oversized", func(tn *authv1beta1.Tenant) { tn.Spec.CSR = make([]byte, csr.MaxSize+1) }, "spec.csr", csr.ErrMalformed},
		{"CSR CN is another cluster", func(tn *authv1beta1.Tenant) {
			tn.Spec.CSR = mustCSR(t, key, &x509.CertificateRequest{Subject: csr.ControlPlaneSubject("cl-other")})
		}, "spec.csr", csr.ErrCommonName},
		{"CSR with extra O", func(tn *authv1beta1.Tenant) {
			tn.Spec.CSR = mustCSR(t, key, &x509.CertificateRequest{Subject: pkix.Name{CommonName: consumerID, Organization: []string{"liqo.io", "admins"}}})
		}, "spec.csr", csr.ErrOrganization},
		{"CSR with O system:masters", func(tn *authv1beta1.Tenant) {
			tn.Spec.CSR = mustCSR(t, key, &x509.CertificateRequest{Subject: pkix.Name{CommonName: consumerID, Organization: []string{"system:masters"}}})
		}, "spec.csr", csr.ErrOrganization},
		{"CSR with a DNS SAN", func(tn *authv1beta1.Tenant) {
			tn.Spec.CSR = mustCSR(t, key, &x509.CertificateRequest{Subject: subject, DNSNames: []string{"kubernetes.default"}})
		}, "spec.csr", csr.ErrSAN},
		{"CSR with a URI SAN", func(tn *authv1beta1.Tenant) {
			u, _ := url.Parse("spiffe://cluster/admin")
			tn.Spec.CSR = mustCSR(t, key, &x509.CertificateRequest{Subject: subject, URIs: []*url.URL{u}})
		}, "spec.csr", csr.ErrSAN},
		{"CSR for another key", func(tn *authv1beta1.Tenant) {
			tn.Spec.CSR = mustCSR(t, other, &x509.CertificateRequest{Subject: subject})
		}, "spec.csr", csr.ErrKeyMismatch},
		{"CSR with RSA-1024 key", func(tn *authv1beta1.Tenant) {
			tn.Spec.CSR = mustCSR(t, testkeys.WeakRSA(t), &x509.CertificateRequest{Subject: subject})
		}, "spec.csr", keys.ErrWeak},
		{"proxy URL with ftp scheme", func(tn *authv1beta1.Tenant) {
			s := "ftp://proxy.example"
			tn.Spec.ProxyURL = &s
		}, "spec.proxyURL", tenant.ErrInvalidProxyURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tn, err := tenant.Build(consumerID, key, n, nil)
			require.NoError(t, err)
			tt.mutate(tn)

			_, err = tenant.Verify(tn, n, nil)
			require.ErrorIs(t, err, tt.want)
			var fe *tenant.FieldError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, tt.field, fe.Field)
		})
	}
}

func TestNamespace(t *testing.T) {
	t.Parallel()
	ns := tenant.Namespace("cl-provider")
	require.Equal(t, "liqo-tenant-cl-provider", ns.Name)
	require.Equal(t, map[string]string{
		"liqo.io/tenant-namespace":  "true",
		"liqo.io/remote-cluster-id": "cl-provider",
	}, ns.Labels)
}

func TestValidateChangesNothing(t *testing.T) {
	t.Parallel()
	key := mustKey(t, keys.Ed25519)
	tn, err := tenant.Build(consumerID, key, mustNonce(t), nil)
	require.NoError(t, err)
	before := tn.DeepCopy()
	_, err = tenant.Validate(tn)
	require.NoError(t, err)
	require.Equal(t, before, tn)
}

// TestVerifyLiqoConsumerTenant checks Tenants in the two forms Liqo
// consumers write (raw 32-byte Ed25519 key before v1.0.2, PEM after): the
// Compatible policy accepts them, the Strict one refuses them for lack of a
// transcript.
func TestVerifyLiqoConsumerTenant(t *testing.T) {
	t.Parallel()
	n, err := nonce.Parse("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+Pw==")
	require.NoError(t, err)
	for _, file := range []string{"tenant-raw-ed25519.yaml", "tenant-pem.yaml"} {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(filepath.Join("..", "apis", "authentication", "v1beta1", "testdata", file))
			require.NoError(t, err)
			var tn authv1beta1.Tenant
			require.NoError(t, yaml.UnmarshalStrict(data, &tn))

			v, err := tenant.Verify(&tn, n, &tenant.VerifyOptions{ProviderID: "cl-provider"})
			require.NoError(t, err)
			require.False(t, v.Transcript)
			require.Equal(t, "cl-consumer", v.ClusterID)

			_, err = tenant.Verify(&tn, n, &tenant.VerifyOptions{ProviderID: "cl-provider", Policy: tenant.Strict})
			require.ErrorIs(t, err, tenant.ErrTranscriptMissing)
		})
	}
}
