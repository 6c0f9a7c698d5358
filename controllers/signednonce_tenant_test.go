package controllers_test

import (
	"context"
	"crypto"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/tenant"
)

// The consumer's signed-nonce reconciler writes, beside the signature, the
// Tenant answering the nonce (contract.TenantKey): it verifies against
// that nonce for the provider the namespace is for, carries the cluster's
// public key, the Secret's own signature and the requested proxy URL, and
// nothing secret. A Strict consumer's CSR is for the identity key, bound by
// the transcript; otherwise it is for the cluster key. Removed, the Tenant
// is written again; a malformed proxy URL gets nothing signed.
func TestSignedNonceTenant(t *testing.T) {
	for _, strict := range []bool{false, true} {
		name := "compatible"
		if strict {
			name = "strict"
		}
		t.Run(name, func(t *testing.T) { testSignedNonceTenant(t, strict) })
	}
}

func testSignedNonceTenant(t *testing.T, strict bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	providerID, consumerID := ids(t)
	keyNS := "liqo-" + consumerID
	startManager(t, consumerEnv, func(mgr manager.Manager) error {
		return controllers.SetupConsumer(mgr, controllers.ConsumerConfig{ClusterID: consumerID, KeyNamespace: keyNS, Strict: strict})
	})
	ns := clusterid.TenantNamespace(providerID)
	ensureNamespace(ctx, t, consumerEnv, providerID)
	n, err := nonce.Generate(nil)
	require.NoError(t, err)
	const proxyURL = "http://peering:hunter2@proxy.example.com:3128"
	_, err = consumerEnv.core.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: nonce.SignedSecretName, Labels: map[string]string{nonce.SignedSecretLabel: "true", clusterid.Label: providerID}},
		Data:       map[string][]byte{nonce.SecretKey: []byte(n.Text()), contract.TenantProxyURLKey: []byte(proxyURL)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	s := waitTenantKey(ctx, t, ns)
	got, err := tenant.Decode(s.Data[contract.TenantKey])
	require.NoError(t, err)
	v, err := tenant.Verify(got, n, &tenant.VerifyOptions{ProviderID: providerID, Policy: tenant.Strict})
	require.NoError(t, err, "the Tenant verifies against the nonce, transcript included")
	assert.True(t, v.Transcript)
	assert.Equal(t, consumerID, v.ClusterID)
	assert.Equal(t, consumerID, got.Name)
	assert.Equal(t, clusterid.TenantNamespace(consumerID), got.Namespace)
	require.NotNil(t, got.Spec.ProxyURL)
	assert.Equal(t, proxyURL, *got.Spec.ProxyURL)
	assert.Equal(t, s.Data[nonce.SignedSecretKey], got.Spec.Signature, "one signature over the nonce")
	assert.Equal(t, n.Text(), string(s.Data[nonce.SecretKey]), "Liqo's keys keep their meaning")

	clusterKey, err := kube.NewKeyStore(consumerEnv.core, keyNS).Get(ctx)
	require.NoError(t, err)
	assert.True(t, clusterKey.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(v.PublicKey), "the consumer's cluster key")
	require.NoError(t, nonce.Verify(clusterKey.Public(), n, s.Data[nonce.SignedSecretKey]))
	csrKey := v.CSR.PublicKey().(interface{ Equal(crypto.PublicKey) bool })
	if strict {
		idKey, err := kube.NewKeyring(consumerEnv.core, keyNS).Get(ctx, identity.ControlPlaneName(providerID))
		require.NoError(t, err)
		assert.True(t, csrKey.Equal(idKey.Key.Public()), "a Strict consumer's CSR is for the identity key")
		assert.False(t, csrKey.Equal(clusterKey.Public()))
	} else {
		assert.True(t, csrKey.Equal(clusterKey.Public()), "the CSR is for the cluster key, as Liqo's")
		_, err := kube.NewKeyring(consumerEnv.core, keyNS).Get(ctx, identity.ControlPlaneName(providerID))
		require.ErrorIs(t, err, keys.ErrNotFound, "no identity key")
	}
	// It answers this nonce and this provider only.
	other, err := nonce.Generate(nil)
	require.NoError(t, err)
	_, err = tenant.Verify(got, other, &tenant.VerifyOptions{ProviderID: providerID, Policy: tenant.Strict})
	require.ErrorIs(t, err, keys.ErrBadSignature)
	_, err = tenant.Verify(got, n, &tenant.VerifyOptions{ProviderID: providerID + "-other", Policy: tenant.Strict})
	require.ErrorIs(t, err, tenant.ErrTranscriptMismatch)
	// Nothing secret in the Secret's new data or the Events.
	assert.NotContains(t, string(s.Data[contract.TenantKey]), "PRIVATE KEY")
	requireNoPrivateKeyIn(ctx, t, ns)

	// Removed, the Tenant is written again, with the same signature and a
	// transcript of its own.
	patch := []byte(`{"data":{"` + contract.TenantKey + `":null}}`)
	_, err = consumerEnv.core.CoreV1().Secrets(ns).Patch(ctx, nonce.SignedSecretName, types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
	again := waitTenantKey(ctx, t, ns)
	rebuilt, err := tenant.Decode(again.Data[contract.TenantKey])
	require.NoError(t, err)
	_, err = tenant.Verify(rebuilt, n, &tenant.VerifyOptions{ProviderID: providerID, Policy: tenant.Strict})
	require.NoError(t, err)
	assert.Equal(t, s.Data[nonce.SignedSecretKey], again.Data[nonce.SignedSecretKey], "the signature is never overwritten")
	assert.Equal(t, again.Data[nonce.SignedSecretKey], rebuilt.Spec.Signature)

	// A proxy URL that is not one: nothing signed, nothing built, and the
	// Event does not quote it.
	badID := providerID + "-bad"
	badNS := clusterid.TenantNamespace(badID)
	ensureNamespace(ctx, t, consumerEnv, badID)
	_, err = consumerEnv.core.CoreV1().Secrets(badNS).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: nonce.SignedSecretName, Labels: map[string]string{nonce.SignedSecretLabel: "true", clusterid.Label: badID}},
		Data:       map[string][]byte{nonce.SecretKey: []byte(n.Text()), contract.TenantProxyURLKey: []byte("socks5://peering:hunter2@proxy")},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	note := waitEvent(ctx, t, consumerEnv, badNS, nonce.SignedSecretName, corev1.EventTypeWarning, contract.ReasonInvalidProxyURL)
	assert.NotContains(t, note, "hunter2")
	bad := secret(ctx, t, consumerEnv, badNS, nonce.SignedSecretName)
	assert.Empty(t, bad.Data[nonce.SignedSecretKey], "nothing signed")
	assert.Empty(t, bad.Data[contract.TenantKey], "nothing built")
}

// waitTenantKey waits for the signed-nonce reconciler to write the Tenant
// into the liqo-signed-nonce Secret of ns, and returns the Secret.
func waitTenantKey(ctx context.Context, t *testing.T, ns string) *corev1.Secret {
	t.Helper()
	var s *corev1.Secret
	eventually(t, "the Tenant beside the signed nonce", func() bool {
		s = secret(ctx, t, consumerEnv, ns, nonce.SignedSecretName)
		return s != nil && len(s.Data[contract.TenantKey]) > 0 && len(s.Data[nonce.SignedSecretKey]) > 0
	})
	return s
}

// requireNoPrivateKeyIn checks that no Event in ns quotes a private key.
func requireNoPrivateKeyIn(ctx context.Context, t *testing.T, ns string) {
	t.Helper()
	list, err := consumerEnv.core.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, ev := range list.Items {
		assert.NotContains(t, ev.Note, "PRIVATE KEY")
	}
}

// A request with contract.TenantOwnKeyKey gets, from a consumer that is
// not Strict, the Tenant a Strict one builds: its CSR is for a fresh key of
// the ControlPlane identity, kept in the keyring, and the cluster key only
// signs. The cluster's public key is published (kube.PublicKeyRecord)
// before the signature is written. Any other value of the key gets nothing
// signed.
func TestSignedNonceOwnKey(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	providerID, consumerID := ids(t)
	keyNS := "liqo-" + consumerID
	startManager(t, consumerEnv, func(mgr manager.Manager) error {
		return controllers.SetupConsumer(mgr, controllers.ConsumerConfig{ClusterID: consumerID, KeyNamespace: keyNS})
	})
	ns := clusterid.TenantNamespace(providerID)
	ensureNamespace(ctx, t, consumerEnv, providerID)
	n, err := nonce.Generate(nil)
	require.NoError(t, err)
	_, err = consumerEnv.core.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: nonce.SignedSecretName, Labels: map[string]string{nonce.SignedSecretLabel: "true", clusterid.Label: providerID}},
		Data:       map[string][]byte{nonce.SecretKey: []byte(n.Text()), contract.TenantOwnKeyKey: []byte(contract.TenantOwnKey)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	s := waitTenantKey(ctx, t, ns)
	got, err := tenant.Decode(s.Data[contract.TenantKey])
	require.NoError(t, err)
	v, err := tenant.Verify(got, n, &tenant.VerifyOptions{ProviderID: providerID, Policy: tenant.Strict})
	require.NoError(t, err)
	clusterKey, err := kube.NewKeyStore(consumerEnv.core, keyNS).Get(ctx)
	require.NoError(t, err)
	assert.True(t, keys.Equal(clusterKey.Public(), v.PublicKey), "the cluster key signs")
	idKey, err := kube.NewKeyring(consumerEnv.core, keyNS).Get(ctx, identity.ControlPlaneName(providerID))
	require.NoError(t, err, "the identity's key is kept in the keyring")
	assert.True(t, keys.Equal(idKey.Key.Public(), v.CSR.PublicKey()), "the CSR is for the identity's own key")
	assert.False(t, keys.Equal(clusterKey.Public(), v.CSR.PublicKey()), "not for the cluster key")

	published, err := kube.NewPublicKeyRecord(consumerEnv.core, keyNS).Get(ctx)
	require.NoError(t, err, "the cluster's public key is published")
	assert.True(t, keys.Equal(clusterKey.Public(), published))

	// Another value: nothing signed, nothing built.
	badID := providerID + "-bad"
	badNS := clusterid.TenantNamespace(badID)
	ensureNamespace(ctx, t, consumerEnv, badID)
	_, err = consumerEnv.core.CoreV1().Secrets(badNS).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: nonce.SignedSecretName, Labels: map[string]string{nonce.SignedSecretLabel: "true", clusterid.Label: badID}},
		Data:       map[string][]byte{nonce.SecretKey: []byte(n.Text()), contract.TenantOwnKeyKey: []byte("yes")},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	waitEvent(ctx, t, consumerEnv, badNS, nonce.SignedSecretName, corev1.EventTypeWarning, contract.ReasonInvalidSignedNonceSecret)
	bad := secret(ctx, t, consumerEnv, badNS, nonce.SignedSecretName)
	assert.Empty(t, bad.Data[nonce.SignedSecretKey], "nothing signed")
	assert.Empty(t, bad.Data[contract.TenantKey], "nothing built")
}

// A cluster key made before the controller started is published as soon
// as it runs, before any nonce is signed.
func TestPublicKeyPublishedAtStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, consumerID := ids(t)
	keyNS := "liqo-" + consumerID
	key, err := keys.Ensure(ctx, kube.NewKeyStore(consumerEnv.core, keyNS), nil, keys.Ed25519)
	require.NoError(t, err)
	record := kube.NewPublicKeyRecord(consumerEnv.core, keyNS)
	_, err = record.Get(ctx)
	require.ErrorIs(t, err, keys.ErrNotFound, "no record before the controller runs")
	startManager(t, consumerEnv, func(mgr manager.Manager) error {
		return controllers.SetupConsumer(mgr, controllers.ConsumerConfig{ClusterID: consumerID, KeyNamespace: keyNS})
	})
	eventually(t, "the published key", func() bool {
		got, err := record.Get(ctx)
		return err == nil && keys.Equal(key.Public(), got)
	})
}
