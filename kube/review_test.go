package kube_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/identity/identitytest"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/tenant"
)

// signer is a CA key that signs certificates from any template.
type signer struct {
	cert *x509.Certificate
	key  crypto.Signer
}

func newSigner(t *testing.T, caPEM []byte, key crypto.Signer) signer {
	t.Helper()
	cert, err := csr.ParseCertificate(caPEM)
	require.NoError(t, err)
	return signer{cert: cert, key: key}
}

// sign issues a client certificate for pub with subject.
func (s signer) sign(t *testing.T, pub crypto.PublicKey, subject pkix.Name) []byte {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.cert, pub, s.key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// secondClientCA signs as the provider cluster's second client CA, which
// its API server trusts for clients but which is not its serving CA.
func secondClientCA(t *testing.T) signer {
	t.Helper()
	caPEM, key := providerEnv.cluster.SecondClientCA()
	return newSigner(t, caPEM, key)
}

// unknownCA signs as a CA the provider cluster does not trust.
func unknownCA(t *testing.T) signer {
	t.Helper()
	caPEM, key, err := csr.GenerateCA(nil, "unknown-ca", time.Now().Add(-time.Hour), 24*time.Hour)
	require.NoError(t, err)
	return newSigner(t, caPEM, key)
}

// providerIdentity returns the Identity the provider cluster would hand
// out, with certificate cert and CA ca.
func providerIdentity(t *testing.T, ca, cert []byte) *authv1beta1.Identity {
	t.Helper()
	return providerIdentityOf(t, "cl-review-provider", ca, cert)
}

func providerIdentityOf(t *testing.T, providerID string, ca, cert []byte) *authv1beta1.Identity {
	t.Helper()
	id, err := identity.Build(providerID, authv1beta1.AuthParams{
		CA: ca, SignedCRT: cert, APIServer: providerEnv.cluster.Host(),
	}, nil)
	require.NoError(t, err)
	return id
}

func newIdentityReviewer(t *testing.T, opts *kube.IdentityReviewerOptions) *kube.IdentityReviewer {
	t.Helper()
	r, err := kube.NewIdentityReviewer(opts)
	require.NoError(t, err)
	return r
}

// TestIdentityReviewerAcceptsLiqoIdentities confirms online, on a real API
// server, the Identities a Liqo provider hands out whose certificate does
// not chain to spec.authParams.ca: signed by a client CA that is not the
// serving CA, or with an empty CA (the test cluster's CA is then an extra
// root, as a corporate root would be).
func TestIdentityReviewerAcceptsLiqoIdentities(t *testing.T) {
	t.Parallel()
	const consumerID = "cl-review-consumer"
	key, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	cert := secondClientCA(t).sign(t, key.Public(), csr.ControlPlaneSubject(consumerID))
	tests := []struct {
		name string
		ca   []byte
		opts *kube.IdentityReviewerOptions
	}{
		{"serving CA", providerEnv.cluster.CA(), nil},
		{"serving CA, extra roots unused", providerEnv.cluster.CA(), &kube.IdentityReviewerOptions{RootCAs: unknownCAPEM(t)}},
		{"empty CA, the cluster CA as an extra root", nil, &kube.IdentityReviewerOptions{RootCAs: providerEnv.cluster.CA()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id := providerIdentity(t, tt.ca, cert)
			_, err := identity.Verify(id, consumerID, key.Public(), time.Now(), nil)
			require.NoError(t, err, "offline, without a client CA")
			cfg, err := kubeconfig.FromIdentity(id, key)
			require.NoError(t, err)
			r := newIdentityReviewer(t, tt.opts)
			user, groups, err := r.Review(t.Context(), cfg)
			require.NoError(t, err)
			require.Equal(t, consumerID, user)
			require.Contains(t, groups, csr.ControlPlaneOrganization)
			require.Contains(t, groups, "system:authenticated")
			require.NoError(t, identity.Confirm(t.Context(), r, cfg, consumerID))
		})
	}
}

func unknownCAPEM(t *testing.T) []byte {
	t.Helper()
	caPEM, _, err := csr.GenerateCA(nil, "extra-root", time.Now(), time.Hour)
	require.NoError(t, err)
	return caPEM
}

// TestIdentityReviewerRefuses presents credentials the provider's API server
// refuses, or takes for another user or groups, and a server the
// kubeconfig does not trust.
func TestIdentityReviewerRefuses(t *testing.T) {
	t.Parallel()
	const consumerID = "cl-review-consumer"
	key, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	second := secondClientCA(t)
	tests := []struct {
		name    string
		cert    []byte
		ca      []byte
		opts    *kube.IdentityReviewerOptions
		want    error
		checkAs func(t *testing.T, err error)
	}{
		{name: "signed by an unknown CA", cert: unknownCA(t).sign(t, key.Public(), csr.ControlPlaneSubject(consumerID)),
			ca: providerEnv.cluster.CA(), want: identity.ErrRejected, checkAs: func(t *testing.T, err error) {
				require.True(t, apierrors.IsUnauthorized(err), "the API error is kept: %v", err)
			}},
		{name: "another user", cert: second.sign(t, key.Public(), csr.ControlPlaneSubject("cl-someone-else")),
			ca: providerEnv.cluster.CA(), want: identity.ErrWrongUser},
		{name: "another group", cert: second.sign(t, key.Public(), pkix.Name{CommonName: consumerID, Organization: []string{"other.io"}}),
			ca: providerEnv.cluster.CA(), want: identity.ErrWrongUser},
		{name: "no group", cert: second.sign(t, key.Public(), pkix.Name{CommonName: consumerID}),
			ca: providerEnv.cluster.CA(), want: identity.ErrWrongUser},
		{name: "empty CA without the cluster CA as a root", cert: second.sign(t, key.Public(), csr.ControlPlaneSubject(consumerID)),
			checkAs: func(t *testing.T, err error) {
				var unknown x509.UnknownAuthorityError
				require.ErrorAs(t, err, &unknown)
				require.NotErrorIs(t, err, identity.ErrRejected)
			}},
		{name: "the consumer cluster's CA instead of the provider's", cert: second.sign(t, key.Public(), csr.ControlPlaneSubject(consumerID)),
			ca: consumerEnv.cluster.CA(), checkAs: func(t *testing.T, err error) {
				var unknown x509.UnknownAuthorityError
				require.ErrorAs(t, err, &unknown)
				require.NotErrorIs(t, err, identity.ErrRejected)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := kubeconfig.FromIdentity(providerIdentity(t, tt.ca, tt.cert), key)
			require.NoError(t, err)
			err = identity.Confirm(t.Context(), newIdentityReviewer(t, tt.opts), cfg, consumerID)
			require.Error(t, err)
			if tt.want != nil {
				require.ErrorIs(t, err, tt.want)
			}
			if tt.checkAs != nil {
				tt.checkAs(t, err)
			}
			if !errors.Is(tt.want, identity.ErrRejected) {
				require.NotErrorIs(t, err, identity.ErrRejected)
			}
		})
	}
}

func TestNewIdentityReviewerRefusesBadRoots(t *testing.T) {
	t.Parallel()
	_, err := kube.NewIdentityReviewer(&kube.IdentityReviewerOptions{RootCAs: []byte("not PEM")})
	require.Error(t, err)
}

// TestIdentityReviewerApply applies, on the real consumer cluster with the
// provider cluster reachable, an Identity whose certificate the provider's
// second client CA signed; and one the provider refuses, which writes
// nothing. (An Identity with an empty CA is confirmed online above; storing
// one is another matter: IdentityStore's server-side apply sends
// spec.authParams.ca as null, which the CRD refuses.)
func TestIdentityReviewerApply(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	providerID := "cl-rvp-" + shortName(t.Name(), 0)
	consumerID := "cl-rvc-" + shortName(t.Name(), 1)
	keyNamespace := "keys-" + shortName(t.Name(), 2)
	namespaces := kube.NewNamespaces(consumerEnv.client)
	require.NoError(t, namespaces.Ensure(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: keyNamespace}}))
	require.NoError(t, namespaces.Ensure(ctx, tenant.Namespace(providerID)))
	key, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	require.NoError(t, kube.NewKeyStore(consumerEnv.client, keyNamespace).Create(ctx, key))
	r := newIdentityReviewer(t, &kube.IdentityReviewerOptions{RootCAs: providerEnv.cluster.CA()})
	c, err := consumer.New(consumerID, consumer.Ports{
		Core: consumer.Core{
			Namespaces: kube.NewNamespaces(consumerEnv.client),
			Keys:       kube.NewKeyStore(consumerEnv.client, keyNamespace),
			Identities: kube.NewIdentityStore(consumerEnv.typed),
			Secrets:    kube.NewSecretWriter(consumerEnv.client),
		},
		Reviewer: r,
	}, nil)
	require.NoError(t, err)
	namespace := clusterid.TenantNamespace(providerID)
	secretName := kubeconfig.SecretName(identity.ControlPlaneName(providerID))

	refused := providerIdentityOf(t, providerID, providerEnv.cluster.CA(), unknownCA(t).sign(t, key.Public(), csr.ControlPlaneSubject(consumerID)))
	_, err = c.Apply(ctx, providerID, refused, nil)
	require.ErrorIs(t, err, identity.ErrRejected)
	_, err = consumerEnv.client.CoreV1().Secrets(namespace).Get(ctx, secretName, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "no kubeconfig Secret: %v", err)
	ids, err := kube.NewIdentityStore(consumerEnv.typed).List(ctx, namespace)
	require.NoError(t, err)
	for _, id := range ids {
		require.NotEqual(t, identity.ControlPlaneName(providerID), id.Name, "no Identity")
	}

	id := providerIdentityOf(t, providerID, providerEnv.cluster.CA(), secondClientCA(t).sign(t, key.Public(), csr.ControlPlaneSubject(consumerID)))
	done, err := c.Apply(ctx, providerID, id, nil)
	require.NoError(t, err)
	require.Equal(t, secretName, done.Secret.Name)
	stored, err := consumerEnv.client.CoreV1().Secrets(namespace).Get(ctx, secretName, metav1.GetOptions{})
	require.NoError(t, err)
	cfg, err := kubeconfig.Parse(stored.Data[kubeconfig.SecretKey])
	require.NoError(t, err)
	require.Equal(t, providerEnv.cluster.CA(), cfg.API().Clusters[cfg.API().CurrentContext].CertificateAuthorityData)
	user, _, err := r.Review(ctx, cfg)
	require.NoError(t, err, "the stored kubeconfig works")
	require.Equal(t, consumerID, user)

	// The provider's API server turns out to have a publicly trusted
	// certificate (here: trusted through the extra roots): its Identity
	// carries no CA, and replaces the one held when allowed to.
	noCA := providerIdentityOf(t, providerID, nil, secondClientCA(t).sign(t, key.Public(), csr.ControlPlaneSubject(consumerID)))
	_, err = c.Apply(ctx, providerID, noCA, nil)
	require.ErrorIs(t, err, consumer.ErrEndpointChanged)
	_, err = c.Apply(ctx, providerID, noCA, &consumer.ApplyOptions{ReplaceEndpoint: true})
	require.NoError(t, err)
	stored, err = consumerEnv.client.CoreV1().Secrets(namespace).Get(ctx, secretName, metav1.GetOptions{})
	require.NoError(t, err)
	cfg, err = kubeconfig.Parse(stored.Data[kubeconfig.SecretKey])
	require.NoError(t, err)
	require.Empty(t, cfg.API().Clusters[cfg.API().CurrentContext].CertificateAuthorityData, "no CA: the system roots")
	user, _, err = r.Review(ctx, cfg)
	require.NoError(t, err, "the stored kubeconfig without a CA works")
	require.Equal(t, consumerID, user)
	ids, err = kube.NewIdentityStore(consumerEnv.typed).List(ctx, namespace)
	require.NoError(t, err)
	for _, id := range ids {
		if id.Name == identity.ControlPlaneName(providerID) {
			require.Empty(t, id.Spec.AuthParams.CA, "stored Identity without a CA")
		}
	}
}

func TestIdentityReviewerConformance(t *testing.T) {
	caPEM, caKey := providerEnv.cluster.SecondClientCA()
	identitytest.RunReviewer(t, identitytest.ReviewerHarness{
		New:         func(t *testing.T) identity.Reviewer { return newIdentityReviewer(t, nil) },
		Server:      providerEnv.cluster.Host(),
		CA:          providerEnv.cluster.CA(),
		ClientCA:    caPEM,
		ClientCAKey: caKey,
		Parallel:    true,
	})
}
