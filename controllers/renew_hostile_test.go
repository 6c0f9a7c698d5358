package controllers_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/renewal"
)

// clockSigner signs at once with the provider cluster's second client CA,
// certificates valid from a second before its clock's now for exactly the
// lifetime asked, and counts what it signs for the user counted: the
// provider's reconcilers also re-sign what other tests left in the shared
// cluster.
type clockSigner struct {
	ca      *x509.Certificate
	key     crypto.Signer
	clock   clock.PassiveClock
	counted string
	signed  atomic.Int32
}

func (s *clockSigner) Sign(_ context.Context, r csr.Request) ([]byte, error) {
	if r.CSR.Subject().CommonName == s.counted {
		s.signed.Add(1)
	}
	now := s.clock.Now()
	return signCertificate(r.CSR.Subject().CommonName, r.CSR.Subject().Organization, r.CSR.PublicKey(), now.Add(-time.Second), now.Add(r.Lifetime), s.ca, s.key)
}

// signCertificate returns a PEM client certificate for pub, issued by ca
// with caKey, or self-issued when ca is nil.
func signCertificate(cn string, orgs []string, pub crypto.PublicKey, notBefore, notAfter time.Time, ca *x509.Certificate, caKey crypto.Signer) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	tmpl.Subject.CommonName, tmpl.Subject.Organization = cn, orgs
	parent := tmpl
	if ca != nil {
		parent = ca
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, caKey)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// peerClient returns clients of the provider made from the kubeconfig
// Secret namespace/name on the consumer: they act as the peer, with the
// credentials it holds. The first is typed, the second a clientset.
func peerClient(ctx context.Context, t *testing.T, namespace, name string) (client.Client, kubernetes.Interface) {
	t.Helper()
	s := secret(ctx, t, consumerEnv, namespace, name)
	require.NotNil(t, s)
	cfg, err := kubeconfig.Parse(s.Data[kubeconfig.SecretKey])
	require.NoError(t, err)
	rc, err := cfg.RESTConfig()
	require.NoError(t, err)
	scheme, err := controllers.NewScheme()
	require.NoError(t, err)
	c, err := client.New(rc, client.Options{Scheme: scheme})
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(rc)
	require.NoError(t, err)
	return c, cs
}

// TestRenewIgnoresConsumerWrittenStatus: the consumer's ControlPlane
// identity may write its Renew's status on the provider. Whatever it
// writes there (junk, nothing, an expired certificate, or an old one it
// made itself), a new key before half the lifetime of the certificate the
// provider last issued through the Renew is refused with RenewTooEarly,
// and nothing is signed: one certificate for five keys. The record the
// provider decides from is a Secret the consumer may neither read nor
// write. Half-way through, a new key is signed again (and the Tenant's
// own certificate, expired by then, may be re-signed too).
func TestRenewIgnoresConsumerWrittenStatus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	providerID, consumerID := ids(t)
	keyNS := "liqo-" + consumerID
	ns := clusterid.TenantNamespace(consumerID)
	caPEM, caKey := providerEnv.cluster.SecondClientCA()
	ca, err := csr.ParseCertificate(caPEM)
	require.NoError(t, err)
	clk := clocktesting.NewFakeClock(time.Now())
	signer := &clockSigner{ca: ca, key: caKey, clock: clk, counted: consumerID}
	startManager(t, providerEnv, func(mgr manager.Manager) error {
		return controllers.SetupProvider(mgr, controllers.ProviderConfig{
			ClusterID:           providerID,
			Endpoint:            provider.Endpoint{Server: providerEnv.cluster.Host(), CA: providerEnv.cluster.CA()},
			Signer:              signer,
			CertificateLifetime: time.Hour,
			Clock:               clk,
		})
	})
	stopConsumer := startConsumer(t, consumerID, keyNS)
	tn, id := handshake(ctx, t, providerID, consumerID, keyNS, false)
	stopConsumer() // from here on the test is the consumer
	peer, peerCore := peerClient(ctx, t, id.Namespace, id.Status.KubeconfigSecretRef.Name)
	require.Equal(t, int32(1), signer.signed.Load(), "the handshake's certificate")

	// Past half the lifetime of the Tenant's certificate: one new key may
	// be certified.
	clk.SetTime(clk.Now().Add(31 * time.Minute))
	newKey := func() (*keys.PrivateKey, authv1beta1.RenewSpec) {
		key, err := keys.Generate(nil, keys.Ed25519)
		require.NoError(t, err)
		spec := authv1beta1.RenewSpec{ConsumerClusterID: consumerID, IdentityType: authv1beta1.ControlPlaneIdentityType}
		spec.PublicKey, err = keys.MarshalPublicKey(key.Public())
		require.NoError(t, err)
		spec.CSR, err = csr.Create(nil, key, csr.ControlPlaneSubject(consumerID))
		require.NoError(t, err)
		return key, spec
	}
	certFor := func(rn *authv1beta1.Renew, key *keys.PrivateKey) bool {
		if rn.Status.AuthParams == nil {
			return false
		}
		cert, err := csr.ParseCertificate(rn.Status.AuthParams.SignedCRT)
		return err == nil && keys.Equal(cert.PublicKey, key.Public())
	}
	first, spec := newKey()
	rn := &authv1beta1.Renew{ObjectMeta: metav1.ObjectMeta{Name: renewal.Name(providerID), Namespace: ns, Labels: map[string]string{
		renewal.ReplicatedLabel: "true", renewal.OriginIDLabel: consumerID, clusterid.Label: consumerID,
	}}, Spec: spec}
	// The consumer's replicator may have written it already, before the
	// consumer's controllers stopped.
	if err := peer.Create(ctx, rn); apierrors.IsAlreadyExists(err) {
		require.NoError(t, peer.Get(ctx, client.ObjectKeyFromObject(rn), rn))
		rn.Spec = spec
		require.NoError(t, peer.Update(ctx, rn), "the consumer writes its Renew")
	} else {
		require.NoError(t, err, "the consumer writes its Renew")
	}
	eventually(t, "a certificate for the first new key", func() bool {
		require.NoError(t, peer.Get(ctx, client.ObjectKeyFromObject(rn), rn))
		return certFor(rn, first)
	})
	require.Equal(t, int32(2), signer.signed.Load())
	issued, err := csr.ParseCertificate(rn.Status.AuthParams.SignedCRT)
	require.NoError(t, err)
	until := renewal.EarliestNewKey(issued)

	for _, tt := range []struct {
		name   string
		status func(key *keys.PrivateKey) *authv1beta1.AuthParams
	}{
		{"junk", func(*keys.PrivateKey) *authv1beta1.AuthParams {
			return &authv1beta1.AuthParams{SignedCRT: []byte("not a certificate")}
		}},
		{"nothing", func(*keys.PrivateKey) *authv1beta1.AuthParams { return nil }},
		{"an expired certificate", func(key *keys.PrivateKey) *authv1beta1.AuthParams {
			now := clk.Now()
			cert, err := signCertificate(consumerID, []string{csr.ControlPlaneOrganization}, key.Public(), now.Add(-2*time.Hour), now.Add(-time.Hour), ca, caKey)
			require.NoError(t, err)
			return &authv1beta1.AuthParams{SignedCRT: cert}
		}},
		{"an old certificate of its own for the new key", func(key *keys.PrivateKey) *authv1beta1.AuthParams {
			now := clk.Now()
			cert, err := signCertificate(consumerID, []string{csr.ControlPlaneOrganization}, key.Public(), now.Add(-50*time.Minute), now.Add(10*time.Minute), nil, key)
			require.NoError(t, err)
			return &authv1beta1.AuthParams{SignedCRT: cert}
		}},
	} {
		key, spec := newKey()
		require.NoError(t, peer.Get(ctx, client.ObjectKeyFromObject(rn), rn))
		rn.Status.AuthParams = tt.status(key)
		require.NoError(t, peer.Status().Update(ctx, rn), "%s: the consumer writes its Renew's status", tt.name)
		rn.Spec = spec
		require.NoError(t, peer.Update(ctx, rn), "%s: the consumer asks for a new key", tt.name)
		eventually(t, tt.name+": the new key refused as too early", func() bool {
			return renewEvent(ctx, t, ns, rn.Name, rn.ResourceVersion, contract.ReasonRenewTooEarly) || signer.signed.Load() > 2
		})
		require.Equal(t, int32(2), signer.signed.Load(), "%s: nothing more is signed", tt.name)
	}

	// The record is the provider's: the consumer can neither read nor
	// write it, nor the Tenant's status.
	record := renewal.RecordKey(consumerID)
	require.NotNil(t, secret(ctx, t, providerEnv, ns, record.SecretName()), "the provider's record of the certificate issued")
	_, err = peerCore.CoreV1().Secrets(ns).Get(ctx, record.SecretName(), metav1.GetOptions{})
	require.True(t, apierrors.IsForbidden(err), "the consumer reads the record: %v", err)
	err = peerCore.CoreV1().Secrets(ns).Delete(ctx, record.SecretName(), metav1.DeleteOptions{})
	require.True(t, apierrors.IsForbidden(err), "the consumer deletes the record: %v", err)
	err = peer.Status().Patch(ctx, tn, client.RawPatch(types.MergePatchType, []byte(`{"status":{"tenantNamespace":"x"}}`)))
	require.True(t, apierrors.IsForbidden(err), "the consumer writes the Tenant's status: %v", err)

	// Half-way through the certificate issued, a new key is certified.
	clk.SetTime(until)
	last, spec := newKey()
	require.NoError(t, peer.Get(ctx, client.ObjectKeyFromObject(rn), rn))
	rn.Spec = spec
	require.NoError(t, peer.Update(ctx, rn))
	eventually(t, "a certificate for a new key half-way through", func() bool {
		require.NoError(t, peer.Get(ctx, client.ObjectKeyFromObject(rn), rn))
		return certFor(rn, last)
	})
	require.NoError(t, providerEnv.client.Delete(ctx, tn))
	eventually(t, "the Tenant gone", func() bool {
		return apierrors.IsNotFound(providerEnv.client.Get(ctx, client.ObjectKeyFromObject(tn), &authv1beta1.Tenant{}))
	})
}

// renewEvent reports whether an Event of reason is about the Renew
// namespace/name at resourceVersion.
func renewEvent(ctx context.Context, t *testing.T, namespace, name, resourceVersion, reason string) bool {
	t.Helper()
	list, err := providerEnv.core.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, ev := range list.Items {
		if ev.Regarding.Name == name && ev.Regarding.ResourceVersion == resourceVersion && ev.Reason == reason {
			return true
		}
	}
	return false
}
