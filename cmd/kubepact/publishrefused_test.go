package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/provider"
)

// TestAuthenticateControllerAsAdmin: the consumer's controller runs with
// an administrator's kubeconfig, not as its ServiceAccount, where config/
// is installed: the admission policy refuses it the record of the
// cluster's public key, and it says so with a PublishRefused Warning.
// authenticate ends at that Warning at once (not at its timeout) with a
// *BlockedError that names the fix: run the controller as its
// ServiceAccount. Clusters of its own: config/'s policy guards the key
// namespace liqo, which other tests' controllers write as administrators.
func TestAuthenticateControllerAsAdmin(t *testing.T) {
	t.Parallel()
	ctrl.SetLogger(logr.Discard())
	envs := isolatedEnvs(t, "admin-provider", "admin-consumer")
	prov, cons := envs[0], envs[1]
	ctx := testContext(t)
	applyConfig(t, ctx, cons, "controller")
	_, err := cons.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: keys.DefaultNamespace}}, metav1.CreateOptions{})
	require.NoError(t, err)
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	awaitPolicy(t, func() error { return kube.NewPublicKeyRecord(cons.client, keys.DefaultNamespace).Publish(ctx, pub) })

	providerID, _, err := kube.EnsureClusterID(ctx, prov.client, "", nil)
	require.NoError(t, err)
	consumerID, _, err := kube.EnsureClusterID(ctx, cons.client, "", nil)
	require.NoError(t, err)
	startController(t, prov.cluster.AdminConfig(), func(mgr manager.Manager) error {
		return controllers.SetupProvider(mgr, controllers.ProviderConfig{ClusterID: providerID,
			Endpoint: provider.Endpoint{Server: prov.cluster.Host(), CA: prov.cluster.CA()}})
	})
	startController(t, cons.cluster.AdminConfig(), func(mgr manager.Manager) error {
		return controllers.SetupConsumer(mgr, controllers.ConsumerConfig{ClusterID: consumerID, KeyNamespace: keys.DefaultNamespace})
	})
	for _, e := range []*testEnv{prov, cons} {
		require.Eventually(t, func() bool {
			_, err := findController(ctx, e.client, keys.DefaultNamespace)
			return err == nil
		}, time.Minute, 100*time.Millisecond, "the controller holds its Lease on %s", e.cluster.Name())
	}

	start := time.Now()
	r, err := cliErr(t, nil, "authenticate", "--kubeconfig", cons.kubeconfig, "--remote-kubeconfig", prov.kubeconfig, "--timeout", "2m")
	returned := time.Now()
	var blocked *BlockedError
	require.ErrorAs(t, err, &blocked, r.stderr)
	require.ErrorIs(t, err, errBlocked)
	assert.Equal(t, contract.ReasonPublishRefused, blocked.Reason)
	assert.Equal(t, consumerRole, blocked.Role)
	assert.Equal(t, exitError, r.code)
	ev := newestEvent(t, ctx, cons, clusterid.TenantNamespace(providerID), "Secret", nonce.SignedSecretName, contract.ReasonPublishRefused)
	assert.Equal(t, ev.Note, blocked.Note)
	assert.Contains(t, r.stderr, ev.Note, "the whole note")
	assert.Contains(t, r.stderr, "kubectl create token kubepact-controller -n kubepact-system", "the fix")
	assert.Contains(t, r.stderr, "--as=system:serviceaccount:kubepact-system:kubepact-controller", "the fix")
	assert.Less(t, returned.Sub(start), 15*time.Second, "authenticate waited for its timeout")
	t.Logf("%s\n%s", returned.Sub(start).Round(time.Millisecond), r.stderr)

	// Nothing was signed for the provider.
	s, err := cons.client.CoreV1().Secrets(clusterid.TenantNamespace(providerID)).Get(ctx, nonce.SignedSecretName, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		require.NoError(t, err)
		assert.Empty(t, s.Data[nonce.SignedSecretKey])
	}
}
