package controllers_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/tenant"
)

// ids returns a provider and a consumer cluster ID unique to the test.
func ids(t *testing.T) (providerID, consumerID string) {
	sum := sha256.Sum256([]byte(t.Name()))
	return fmt.Sprintf("cl-p-%x", sum[:5]), fmt.Sprintf("cl-c-%x", sum[:5])
}

// startProvider runs the provider's reconcilers on the provider cluster.
func startProvider(t *testing.T, providerID string, policy tenant.Policy, signer csr.Signer) (stop func()) {
	t.Helper()
	return startManager(t, providerEnv, func(mgr manager.Manager) error {
		return controllers.SetupProvider(mgr, controllers.ProviderConfig{
			ClusterID: providerID,
			Endpoint:  provider.Endpoint{Server: providerEnv.cluster.Host(), CA: providerEnv.cluster.CA()},
			Policy:    policy,
			Signer:    signer,
		})
	})
}

// startConsumer runs the consumer's reconcilers on the consumer cluster,
// the cluster key kept in keyNamespace.
func startConsumer(t *testing.T, consumerID, keyNamespace string) (stop func()) {
	t.Helper()
	return startManager(t, consumerEnv, func(mgr manager.Manager) error {
		return controllers.SetupConsumer(mgr, controllers.ConsumerConfig{ClusterID: consumerID, KeyNamespace: keyNamespace})
	})
}

// requestNonce is liqoctl's step 1 on the provider: the tenant namespace
// and an empty, labelled liqo-nonce Secret; then it waits for the nonce.
func requestNonce(ctx context.Context, t *testing.T, consumerID string) nonce.Nonce {
	t.Helper()
	ensureNamespace(ctx, t, providerEnv, consumerID)
	ns := clusterid.TenantNamespace(consumerID)
	_, err := providerEnv.core.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: nonce.SecretName, Labels: map[string]string{nonce.SecretLabel: "true", clusterid.Label: consumerID}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	var n nonce.Nonce
	eventually(t, "the nonce", func() bool {
		s := secret(ctx, t, providerEnv, ns, nonce.SecretName)
		if s == nil || len(s.Data[nonce.SecretKey]) == 0 {
			return false
		}
		n, err = nonce.Parse(string(s.Data[nonce.SecretKey]))
		require.NoError(t, err)
		return true
	})
	waitEvent(ctx, t, providerEnv, ns, nonce.SecretName, corev1.EventTypeNormal, contract.ReasonNonceGenerated)
	return n
}

// signNonce is liqoctl's step 2 on the consumer: liqo-signed-nonce with
// the provider's nonce; then it waits for the signature.
func signNonce(ctx context.Context, t *testing.T, providerID string, n nonce.Nonce) []byte {
	t.Helper()
	ensureNamespace(ctx, t, consumerEnv, providerID)
	ns := clusterid.TenantNamespace(providerID)
	_, err := consumerEnv.core.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: nonce.SignedSecretName, Labels: map[string]string{nonce.SignedSecretLabel: "true", clusterid.Label: providerID}},
		Data:       map[string][]byte{nonce.SecretKey: []byte(n.Text())},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	var sig []byte
	eventually(t, "the signed nonce", func() bool {
		s := secret(ctx, t, consumerEnv, ns, nonce.SignedSecretName)
		sig = s.Data[nonce.SignedSecretKey]
		return len(sig) > 0
	})
	return sig
}

// buildTenant is liqoctl's step 3 up to the apply: the Tenant built from
// the consumer's key Secret, the signed nonce and a fresh CSR, with a
// transcript for the provider when transcript is set.
func buildTenant(ctx context.Context, t *testing.T, providerID, consumerID, keyNamespace string, n nonce.Nonce, sig []byte, transcript bool) *authv1beta1.Tenant {
	t.Helper()
	key, err := kube.NewKeyStore(consumerEnv.core, keyNamespace).Get(ctx)
	require.NoError(t, err)
	require.NoError(t, nonce.Verify(key.Public(), n, sig), "the consumer signed the nonce with its cluster key")
	var opts *tenant.BuildOptions
	if transcript {
		opts = &tenant.BuildOptions{ProviderID: providerID, Expiry: time.Now().Add(10 * time.Minute)}
	}
	tn, err := tenant.Build(consumerID, key, n, opts)
	require.NoError(t, err)
	tn.Spec.Signature = sig // what liqoctl sends: the signature the consumer's controller made
	return tn
}

// waitTenantStatus waits for the provider to fill the status of the
// consumer's Tenant.
func waitTenantStatus(ctx context.Context, t *testing.T, consumerID string) *authv1beta1.Tenant {
	t.Helper()
	var tn authv1beta1.Tenant
	eventually(t, "the Tenant's status", func() bool {
		require.NoError(t, providerEnv.client.Get(ctx, client.ObjectKey{Namespace: clusterid.TenantNamespace(consumerID), Name: consumerID}, &tn))
		return tn.Status.AuthParams != nil && len(tn.Status.AuthParams.SignedCRT) > 0
	})
	return &tn
}

// applyIdentity is liqoctl's step 4: the Identity built from the Tenant's
// status, applied on the consumer; then it waits for its status.
func applyIdentity(ctx context.Context, t *testing.T, providerID string, tn *authv1beta1.Tenant) *authv1beta1.Identity {
	t.Helper()
	id, err := identity.Build(providerID, *tn.Status.AuthParams, &identity.BuildOptions{TenantNamespace: tn.Status.TenantNamespace})
	require.NoError(t, err)
	require.NoError(t, consumerEnv.client.Create(ctx, id))
	eventually(t, "the Identity's status", func() bool {
		require.NoError(t, consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(id), id))
		return id.Status.KubeconfigSecretRef != nil
	})
	return id
}

// handshake runs liqoctl's declarative handshake, only writing objects
// and waiting for the controllers, and checks that the kubeconfig works on
// the provider. It returns the Tenant and the Identity.
func handshake(ctx context.Context, t *testing.T, providerID, consumerID, keyNamespace string, transcript bool) (*authv1beta1.Tenant, *authv1beta1.Identity) {
	t.Helper()
	n := requestNonce(ctx, t, consumerID)
	sig := signNonce(ctx, t, providerID, n)
	tn := buildTenant(ctx, t, providerID, consumerID, keyNamespace, n, sig, transcript)
	require.NoError(t, providerEnv.client.Create(ctx, tn))
	tn = waitTenantStatus(ctx, t, consumerID)
	require.True(t, controllerutil.ContainsFinalizer(tn, tenant.Finalizer))
	id := applyIdentity(ctx, t, providerID, tn)
	requireWorks(ctx, t, providerID, consumerID, id)
	return tn, id
}

var resourceSlices = authv1beta1.SchemeGroupVersion.WithResource(authv1beta1.ResourceSliceResource)

// requireWorks checks that the kubeconfig Secret of id authenticates the
// consumer on the provider and lets it read ResourceSlices in its tenant
// namespace.
func requireWorks(ctx context.Context, t *testing.T, providerID, consumerID string, id *authv1beta1.Identity) {
	t.Helper()
	s := secret(ctx, t, consumerEnv, id.Namespace, id.Status.KubeconfigSecretRef.Name)
	require.NotNil(t, s)
	require.Equal(t, kubeconfig.SecretName(identity.ControlPlaneName(providerID)), s.Name)
	cfg, err := kubeconfig.Parse(s.Data[kubeconfig.SecretKey])
	require.NoError(t, err)
	require.Equal(t, consumerID, cfg.User())
	require.Equal(t, providerEnv.cluster.Host(), cfg.Server())
	rc, err := cfg.RESTConfig()
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(rc)
	require.NoError(t, err)
	_, err = dyn.Resource(resourceSlices).Namespace(clusterid.TenantNamespace(consumerID)).List(ctx, metav1.ListOptions{})
	require.NoError(t, err, "the kubeconfig works on the provider")
}

// requireCleanup checks that deleting the Tenant cleaned up on the
// provider, and deleting the Identity removed the kubeconfig Secret.
func requireCleanup(ctx context.Context, t *testing.T, consumerID string, tn *authv1beta1.Tenant, id *authv1beta1.Identity) {
	t.Helper()
	ns := clusterid.TenantNamespace(consumerID)
	require.NoError(t, providerEnv.client.Delete(ctx, tn))
	eventually(t, "the Tenant gone", func() bool {
		err := providerEnv.client.Get(ctx, client.ObjectKeyFromObject(tn), &authv1beta1.Tenant{})
		return apierrors.IsNotFound(err)
	})
	_, err := providerEnv.core.RbacV1().RoleBindings(ns).Get(ctx, rbac.BindingName(rbac.ControlPlaneClusterRoleName), metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the binding is gone: %v", err)
	// An unpeering, as Liqo's: the nonce and the certificate, still valid,
	// stay with the consumer's key.
	require.NotNil(t, secret(ctx, t, providerEnv, ns, csr.CacheKey{ConsumerID: consumerID}.SecretName()), "the cached certificate stays")
	require.NotNil(t, secret(ctx, t, providerEnv, ns, nonce.SecretName), "the nonce stays")
	waitEvent(ctx, t, providerEnv, ns, tn.Name, corev1.EventTypeNormal, contract.ReasonTenantRemoved)

	name := id.Status.KubeconfigSecretRef.Name
	require.NoError(t, consumerEnv.client.Delete(ctx, id))
	eventually(t, "the kubeconfig Secret gone", func() bool {
		return secret(ctx, t, consumerEnv, id.Namespace, name) == nil
	})
}

// The declarative handshake, driven only by object writes in liqoctl's
// order, under both provider policies, then deleting the Tenant and the
// Identity.
func TestDeclarativeHandshake(t *testing.T) {
	for _, tt := range []struct {
		name       string
		policy     tenant.Policy
		transcript bool
	}{
		{"Compatible, as a Liqo consumer (no transcript)", tenant.Compatible, false},
		{"Strict, with a transcript", tenant.Strict, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			providerID, consumerID := ids(t)
			keyNS := "liqo-" + consumerID
			startProvider(t, providerID, tt.policy, nil)
			startConsumer(t, consumerID, keyNS)

			begin := time.Now()
			tn, id := handshake(ctx, t, providerID, consumerID, keyNS, tt.transcript)
			t.Logf("declarative handshake in %s", time.Since(begin).Round(time.Millisecond))
			require.Equal(t, 1, countCSRs(ctx, t, consumerID), "one CertificateSigningRequest")
			requireSettled(ctx, t, tn, id)
			waitEvent(ctx, t, providerEnv, tn.Namespace, tn.Name, corev1.EventTypeNormal, contract.ReasonTenantAccepted)
			waitEvent(ctx, t, consumerEnv, id.Namespace, id.Name, corev1.EventTypeNormal, contract.ReasonIdentityApplied)
			requireCleanup(ctx, t, consumerID, tn, id)
		})
	}
}

// countCSRs counts the CertificateSigningRequests made for consumerID.
func countCSRs(ctx context.Context, t *testing.T, consumerID string) int {
	t.Helper()
	var list certificatesv1.CertificateSigningRequestList
	require.NoError(t, providerEnv.client.List(ctx, &list, client.MatchingLabels{clusterid.Label: consumerID, kube.CSRLabel: "true"}))
	return len(list.Items)
}

// noApprover approves nothing: a CertificateSigningRequest stays pending,
// as when the controller stops before the API server's signer answers.
type noApprover struct{}

func (noApprover) Approve(context.Context, string, *csr.Checked) error { return nil }

// A provider controller stopped after the Tenant is created, before its
// status, resumes when a new one starts: the same CSR object, then the
// status.
func TestRestartResumes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	providerID, consumerID := ids(t)
	keyNS := "liqo-" + consumerID
	startConsumer(t, consumerID, keyNS)
	stuck := kube.NewCSRSignerWithOptions(providerEnv.core, noApprover{}, &kube.CSRSignerOptions{NoWait: true})
	stop := startProvider(t, providerID, tenant.Compatible, stuck)

	n := requestNonce(ctx, t, consumerID)
	sig := signNonce(ctx, t, providerID, n)
	tn := buildTenant(ctx, t, providerID, consumerID, keyNS, n, sig, false)
	require.NoError(t, providerEnv.client.Create(ctx, tn))
	waitEvent(ctx, t, providerEnv, tn.Namespace, tn.Name, corev1.EventTypeNormal, contract.ReasonCertificatePending)
	stop()
	require.Equal(t, 1, countCSRs(ctx, t, consumerID), "the CSR submitted")
	require.NoError(t, providerEnv.client.Get(ctx, client.ObjectKeyFromObject(tn), tn))
	require.Nil(t, tn.Status.AuthParams, "no status yet")

	startProvider(t, providerID, tenant.Compatible, nil)
	tn = waitTenantStatus(ctx, t, consumerID)
	require.Equal(t, 1, countCSRs(ctx, t, consumerID), "the same CSR object, approved and issued")
	id := applyIdentity(ctx, t, providerID, tn)
	requireWorks(ctx, t, providerID, consumerID, id)
	requireCleanup(ctx, t, consumerID, tn, id)
}

// A local CA signs at once: no CertificateSigningRequest at all.
func TestLocalCA(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	providerID, consumerID := ids(t)
	keyNS := "liqo-" + consumerID
	// The provider cluster's own CA, so its API server takes the certificates.
	ca, key := providerEnv.cluster.SecondClientCA()
	local, err := csr.NewLocalCA(ca, key, nil)
	require.NoError(t, err)
	startProvider(t, providerID, tenant.Compatible, local)
	startConsumer(t, consumerID, keyNS)

	tn, id := handshake(ctx, t, providerID, consumerID, keyNS, false)
	require.Zero(t, countCSRs(ctx, t, consumerID))
	requireCleanup(ctx, t, consumerID, tn, id)
}

// requireSettled checks that the reconcilers' own writes do not requeue
// them for ever: once the handshake is done, neither the Tenant nor the
// Identity changes.
func requireSettled(ctx context.Context, t *testing.T, tn *authv1beta1.Tenant, id *authv1beta1.Identity) {
	t.Helper()
	var tenantRV, identityRV string
	read := func() (string, string) {
		gotT, gotI := &authv1beta1.Tenant{}, &authv1beta1.Identity{}
		require.NoError(t, providerEnv.client.Get(ctx, client.ObjectKeyFromObject(tn), gotT))
		require.NoError(t, consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(id), gotI))
		return gotT.ResourceVersion, gotI.ResourceVersion
	}
	tenantRV, identityRV = read()
	time.Sleep(2 * time.Second)
	gotT, gotI := read()
	require.Equal(t, tenantRV, gotT, "the Tenant is not written again")
	require.Equal(t, identityRV, gotI, "the Identity is not written again")
}
