package kubepact_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubepact/kubepact"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/internal/testkeys"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/tenant"
	"github.com/kubepact/kubepact/wire/memory"
)

// hostileCSR returns a PEM CSR from tmpl signed by key, whatever it asks.
func hostileCSR(t *testing.T, key crypto.Signer, tmpl x509.CertificateRequest) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &tmpl, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// providerWrites counts what a provider wrote: objects and certificates.
func providerWrites(c *memory.Cluster) int {
	return c.Tenants.Writes() + c.RBAC.ClusterRoles.Writes() + c.RBAC.RoleBindings.Writes() + c.Certificates.Len() + c.Signer.Signed()
}

// TestHostileTenants presents every kind of hostile Tenant to a provider. A
// Liqo consumer's Tenant carries no transcript, so the checks behind the
// nonce signature are reached as a Liqo peer would reach them.
func TestHostileTenants(t *testing.T) {
	t.Parallel()
	subject := csr.ControlPlaneSubject(consumerID)
	uri, _ := url.Parse("spiffe://cluster/ns/kube-system")
	tests := []struct {
		name string
		// tenant returns the Tenant presented, given the pair, the nonce the
		// provider issued and the consumer's key.
		tenant func(t *testing.T, p *pair, n nonce.Nonce, key *keys.PrivateKey) *authv1beta1.Tenant
		want   error
	}{
		{"wrong signature", liqoTenantWith(func(tn *authv1beta1.Tenant) { tn.Spec.Signature[7] ^= 0x10 }), keys.ErrBadSignature},
		{"signature by another key", func(t *testing.T, p *pair, n nonce.Nonce, key *keys.PrivateKey) *authv1beta1.Tenant {
			tn := buildLiqo(t, key, n)
			other, err := keys.Generate(nil, keys.Ed25519)
			require.NoError(t, err)
			tn.Spec.Signature, err = nonce.Sign(nil, other, n)
			require.NoError(t, err)
			return tn
		}, keys.ErrBadSignature},
		{"nonce from another tenant", func(t *testing.T, p *pair, _ nonce.Nonce, key *keys.PrivateKey) *authv1beta1.Tenant {
			other, err := p.provider.IssueNonce(context.Background(), "cl-someone-else")
			require.NoError(t, err)
			return buildLiqo(t, key, other)
		}, keys.ErrBadSignature},
		{"reused nonce", func(t *testing.T, p *pair, n nonce.Nonce, key *keys.PrivateKey) *authv1beta1.Tenant {
			_, err := p.provider.Accept(context.Background(), buildLiqo(t, key, n))
			require.NoError(t, err)
			// The nonce stays bound to key: another key cannot use it.
			return buildLiqo(t, testkeys.Generate(t, keys.Ed25519), n)
		}, nonce.ErrRedeemed},
		{"expired nonce", func(t *testing.T, p *pair, n nonce.Nonce, key *keys.PrivateKey) *authv1beta1.Tenant {
			p.clock.Step(nonce.DefaultTTL + time.Second)
			return buildLiqo(t, key, n)
		}, nonce.ErrExpired},
		{"CN is another cluster", csrTenant(func(t *testing.T, key *keys.PrivateKey) []byte {
			return hostileCSR(t, key, x509.CertificateRequest{Subject: csr.ControlPlaneSubject("cl-victim")})
		}), csr.ErrCommonName},
		{"extra O", csrTenant(func(t *testing.T, key *keys.PrivateKey) []byte {
			return hostileCSR(t, key, x509.CertificateRequest{Subject: pkix.Name{CommonName: consumerID, Organization: []string{"liqo.io", "cluster-admins"}}})
		}), csr.ErrOrganization},
		{"O system:masters", csrTenant(func(t *testing.T, key *keys.PrivateKey) []byte {
			return hostileCSR(t, key, x509.CertificateRequest{Subject: pkix.Name{CommonName: consumerID, Organization: []string{"system:masters"}}})
		}), csr.ErrOrganization},
		{"O system:nodes", csrTenant(func(t *testing.T, key *keys.PrivateKey) []byte {
			return hostileCSR(t, key, x509.CertificateRequest{Subject: pkix.Name{CommonName: consumerID, Organization: []string{"system:nodes"}}})
		}), csr.ErrOrganization},
		{"DNS SAN", csrTenant(func(t *testing.T, key *keys.PrivateKey) []byte {
			return hostileCSR(t, key, x509.CertificateRequest{Subject: subject, DNSNames: []string{"kubernetes.default.svc"}})
		}), csr.ErrSAN},
		{"IP SAN", csrTenant(func(t *testing.T, key *keys.PrivateKey) []byte {
			return hostileCSR(t, key, x509.CertificateRequest{Subject: subject, IPAddresses: []net.IP{net.ParseIP("10.0.0.1")}})
		}), csr.ErrSAN},
		{"email SAN", csrTenant(func(t *testing.T, key *keys.PrivateKey) []byte {
			return hostileCSR(t, key, x509.CertificateRequest{Subject: subject, EmailAddresses: []string{"admin@example.com"}})
		}), csr.ErrSAN},
		{"URI SAN", csrTenant(func(t *testing.T, key *keys.PrivateKey) []byte {
			return hostileCSR(t, key, x509.CertificateRequest{Subject: subject, URIs: []*url.URL{uri}})
		}), csr.ErrSAN},
		{"RSA-1024 key", func(t *testing.T, p *pair, n nonce.Nonce, _ *keys.PrivateKey) *authv1beta1.Tenant {
			// A consumer whose cluster key is RSA-1024 signs everything with it.
			return buildLiqo(t, testkeys.WeakRSA(t), n)
		}, keys.ErrWeak},
		{"CSR for another key", csrTenant(func(t *testing.T, _ *keys.PrivateKey) []byte {
			other, err := keys.Generate(nil, keys.Ed25519)
			require.NoError(t, err)
			return hostileCSR(t, other, x509.CertificateRequest{Subject: subject})
		}), csr.ErrKeyMismatch},
		{"truncated public key", liqoTenantWith(func(tn *authv1beta1.Tenant) { tn.Spec.PublicKey = tn.Spec.PublicKey[:60] }), keys.ErrMalformed},
		{"truncated CSR", liqoTenantWith(func(tn *authv1beta1.Tenant) { tn.Spec.CSR = tn.Spec.CSR[:len(tn.Spec.CSR)/2] }), csr.ErrMalformed},
		{"truncated signature", liqoTenantWith(func(tn *authv1beta1.Tenant) { tn.Spec.Signature = tn.Spec.Signature[:31] }), keys.ErrBadSignature},
		{"cluster ID not a DNS-1123 label", liqoTenantWith(func(tn *authv1beta1.Tenant) { tn.Spec.ClusterID = "cl.consumer" }), clusterid.ErrInvalid},
		{"cluster ID too long", liqoTenantWith(func(tn *authv1beta1.Tenant) { tn.Spec.ClusterID = strings.Repeat("c", 52) }), clusterid.ErrInvalid},
		{"proxy URL ftp", liqoTenantWith(func(tn *authv1beta1.Tenant) { s := "ftp://proxy"; tn.Spec.ProxyURL = &s }), tenant.ErrInvalidProxyURL},
		{"proxy URL socks5", liqoTenantWith(func(tn *authv1beta1.Tenant) { s := "socks5://proxy:1080"; tn.Spec.ProxyURL = &s }), tenant.ErrInvalidProxyURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			p := newModePair(t, tenant.Compatible, false)
			n, err := p.provider.IssueNonce(ctx, consumerID)
			require.NoError(t, err)
			key, err := keys.Ensure(ctx, p.consumerCluster.Keys, nil, keys.Ed25519)
			require.NoError(t, err)
			tn := tt.tenant(t, p, n, key)
			before := providerWrites(p.providerCluster)

			_, err = p.provider.Accept(ctx, tn)
			require.ErrorIs(t, err, tt.want)
			require.Equal(t, before, providerWrites(p.providerCluster), "a rejected Tenant writes nothing")
		})
	}
}

// buildLiqo returns the Tenant a Liqo consumer with key sends for n.
func buildLiqo(t *testing.T, key crypto.Signer, n nonce.Nonce) *authv1beta1.Tenant {
	t.Helper()
	tn, err := tenant.Build(consumerID, key, n, nil)
	if err != nil {
		// tenant.Build refuses weak keys itself: encode the Tenant by hand.
		require.ErrorIs(t, err, keys.ErrWeak)
		der, merr := x509.MarshalPKIXPublicKey(key.Public())
		require.NoError(t, merr)
		sig, serr := keys.SignMessage(nil, key, []byte(n.Text()))
		require.NoError(t, serr)
		return &authv1beta1.Tenant{
			ObjectMeta: metav1.ObjectMeta{Name: consumerID, Namespace: clusterid.TenantNamespace(consumerID)},
			Spec: authv1beta1.TenantSpec{
				ClusterID: consumerID,
				PublicKey: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}),
				CSR:       hostileCSR(t, key, x509.CertificateRequest{Subject: csr.ControlPlaneSubject(consumerID)}),
				Signature: sig,
			},
		}
	}
	return tn
}

func liqoTenantWith(mutate func(*authv1beta1.Tenant)) func(*testing.T, *pair, nonce.Nonce, *keys.PrivateKey) *authv1beta1.Tenant {
	return func(t *testing.T, _ *pair, n nonce.Nonce, key *keys.PrivateKey) *authv1beta1.Tenant {
		tn := buildLiqo(t, key, n)
		mutate(tn)
		return tn
	}
}

func csrTenant(make func(*testing.T, *keys.PrivateKey) []byte) func(*testing.T, *pair, nonce.Nonce, *keys.PrivateKey) *authv1beta1.Tenant {
	return func(t *testing.T, _ *pair, n nonce.Nonce, key *keys.PrivateKey) *authv1beta1.Tenant {
		tn := buildLiqo(t, key, n)
		tn.Spec.CSR = make(t, key)
		return tn
	}
}

// TestHostileTenantFiles checks that Tenant and Identity files with
// truncated or non-base64 fields, or oversized, are refused when decoded.
func TestHostileTenantFiles(t *testing.T) {
	t.Parallel()
	p := newModePair(t, tenant.Compatible, false)
	done, err := kubepact.Authenticate(context.Background(), p.consumer, p.provider, nil)
	require.NoError(t, err)
	tn, err := p.providerCluster.Tenants.Get(context.Background(), clusterid.TenantNamespace(consumerID), consumerID)
	require.NoError(t, err)
	tn.Status = authv1beta1.TenantStatus{}
	tenantYAML, err := yaml.Marshal(tn)
	require.NoError(t, err)
	identityYAML, err := yaml.Marshal(done.Identity)
	require.NoError(t, err)

	_, err = tenant.Decode(tenantYAML)
	require.NoError(t, err)
	_, err = identity.Decode(identityYAML)
	require.NoError(t, err)
	for name, data := range map[string][]byte{
		"truncated":        tenantYAML[:strings.Index(string(tenantYAML), "clusterID: ")+len("clusterID")],
		"non-base64 field": []byte(strings.Replace(string(tenantYAML), "signature: ", "signature: '!!not base64!!'\n  x: ", 1)),
		"unknown field":    append(append([]byte{}, tenantYAML...), []byte("extra: 1\n")...),
		"another kind":     identityYAML,
		"oversized":        append(append([]byte{}, tenantYAML...), []byte("# "+strings.Repeat("x", tenant.MaxObjectSize))...),
		"empty":            nil,
	} {
		_, err := tenant.Decode(data)
		require.ErrorIs(t, err, tenant.ErrMalformed, name)
	}
	for name, data := range map[string][]byte{
		"truncated":        identityYAML[:len(identityYAML)/3],
		"non-base64 field": []byte(strings.Replace(string(identityYAML), "signedCRT: ", "signedCRT: '%%%'\n    x: ", 1)),
		"another kind":     tenantYAML,
	} {
		_, err := identity.Decode(data)
		require.ErrorIs(t, err, identity.ErrMalformed, name)
	}
}

// TestHostileIdentities presents every kind of hostile Identity to a
// consumer: it must refuse each and write nothing.
func TestHostileIdentities(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(t *testing.T, p *pair, id *authv1beta1.Identity)
		want   error
	}{
		{"certificate from another CA", func(t *testing.T, p *pair, id *authv1beta1.Identity) {
			other, err := memory.NewCluster("cl-other", &memory.ClusterOptions{Clock: p.clock})
			require.NoError(t, err)
			key, err := p.consumerCluster.Keys.Get(context.Background())
			require.NoError(t, err)
			req, err := csr.Create(nil, key, csr.ControlPlaneSubject(consumerID))
			require.NoError(t, err)
			checked, err := csr.Check(req, csr.ControlPlanePolicy(consumerID, key.Public()))
			require.NoError(t, err)
			id.Spec.AuthParams.SignedCRT, err = other.Signer.Sign(context.Background(), csr.Request{CSR: checked})
			require.NoError(t, err)
		}, identity.ErrRejected}, // the provider's API server refuses it
		{"expired certificate", func(t *testing.T, p *pair, _ *authv1beta1.Identity) {
			p.clock.Step(2 * 90 * 24 * time.Hour)
		}, identity.ErrExpired},
		{"not-yet-valid certificate", func(t *testing.T, p *pair, _ *authv1beta1.Identity) {
			p.clock.Step(-time.Hour)
		}, identity.ErrNotYetValid},
		{"certificate for another key", func(t *testing.T, p *pair, id *authv1beta1.Identity) {
			other, err := keys.Generate(nil, keys.Ed25519)
			require.NoError(t, err)
			req, err := csr.Create(nil, other, csr.ControlPlaneSubject(consumerID))
			require.NoError(t, err)
			checked, err := csr.Check(req, csr.ControlPlanePolicy(consumerID, other.Public()))
			require.NoError(t, err)
			id.Spec.AuthParams.SignedCRT, err = p.providerCluster.Signer.Sign(context.Background(), csr.Request{CSR: checked})
			require.NoError(t, err)
		}, identity.ErrKeyMismatch},
		{"truncated certificate", func(t *testing.T, _ *pair, id *authv1beta1.Identity) {
			id.Spec.AuthParams.SignedCRT = id.Spec.AuthParams.SignedCRT[:80]
		}, identity.ErrMalformed},
		{"proxy URL with another scheme", func(t *testing.T, _ *pair, id *authv1beta1.Identity) {
			s := "file:///etc/passwd"
			id.Spec.AuthParams.ProxyURL = &s
		}, tenant.ErrInvalidProxyURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			p := newModePair(t, tenant.Compatible, false)
			tn := ourTenant(t, p)
			id, err := p.provider.Accept(ctx, tn)
			require.NoError(t, err)
			tt.mutate(t, p, id)
			before := p.consumerCluster.Identities.Writes() + p.consumerCluster.Secrets.Writes()

			_, err = p.consumer.Apply(ctx, providerID, id, nil)
			require.ErrorIs(t, err, tt.want)
			require.Equal(t, before, p.consumerCluster.Identities.Writes()+p.consumerCluster.Secrets.Writes(), "a rejected Identity writes nothing")
		})
	}
}
