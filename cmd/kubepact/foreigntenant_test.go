package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/tenant"
)

// TestAuthenticateRefusesForeignTenant plays a local user of the consumer
// who may only write Secrets in the consumer's tenant namespace for the
// provider: when kubepact authenticate creates liqo-signed-nonce there, it
// writes its own signature and a Tenant of the consumer's ID signed with its
// own key, so that the provider would certify its key as the consumer. The
// CLI checks the Tenant against the cluster key the consumer's
// kubepact-controller publishes, refuses it with errUntrustedTenant, and no
// Tenant reaches the provider.
//
// The race is made certain: the consumer's controller is slowed on its
// writes of the signed-nonce Secret, so the attacker's write always lands
// first, as it may on a busy controller.
func TestAuthenticateRefusesForeignTenant(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	ctx := testContext(t)
	ns := unique("liqo-foreign")
	consumerID, _, err := kube.EnsureClusterID(ctx, consumerEnv.client, "", &kube.ClusterIDOptions{Namespace: ns})
	require.NoError(t, err)
	providerID, _, err := kube.EnsureClusterID(ctx, providerEnv.client, "", &kube.ClusterIDOptions{Namespace: ns})
	require.NoError(t, err)
	require.NoError(t, rbac.Install(ctx, kube.NewRBAC(providerEnv.client)))
	startController(t, providerEnv.cluster.AdminConfig(), func(mgr manager.Manager) error {
		return controllers.SetupProvider(mgr, controllers.ProviderConfig{
			ClusterID: providerID,
			Endpoint:  provider.Endpoint{Server: providerEnv.cluster.Host(), CA: providerEnv.cluster.CA()},
		})
	})
	tenantNS := clusterid.TenantNamespace(providerID)
	slow := rest.CopyConfig(consumerEnv.cluster.AdminConfig())
	slow.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodPatch && strings.HasSuffix(req.URL.Path, "/namespaces/"+tenantNS+"/secrets/"+nonce.SignedSecretName) {
				time.Sleep(2 * time.Second)
			}
			return rt.RoundTrip(req)
		})
	})
	startController(t, slow, func(mgr manager.Manager) error {
		return controllers.SetupConsumer(mgr, controllers.ConsumerConfig{ClusterID: consumerID, KeyNamespace: ns})
	})
	for _, e := range []*testEnv{providerEnv, consumerEnv} {
		require.Eventually(t, func() bool {
			_, err := findController(ctx, e.client, ns)
			return err == nil
		}, time.Minute, 100*time.Millisecond, "the controller holds its Lease on %s", e.cluster.Name())
	}
	// Leading, the consumer's controller made the cluster key and published it.
	require.Eventually(t, func() bool {
		_, err := kube.NewPublicKeyRecord(consumerEnv.client, ns).Get(ctx)
		return err == nil
	}, time.Minute, 100*time.Millisecond, "the consumer's controller publishes the cluster's public key")

	// The tenant namespace exists (an earlier peering made it), and the
	// attacker holds a Role on its Secrets, nothing else.
	_, err = consumerEnv.client.CoreV1().Namespaces().Create(ctx, tenant.Namespace(providerID), metav1.CreateOptions{})
	require.NoError(t, err)
	const mallory = "mallory"
	_, err = consumerEnv.client.RbacV1().Roles(tenantNS).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: mallory},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch", "update", "patch"}}}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = consumerEnv.client.RbacV1().RoleBindings(tenantNS).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: mallory},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: mallory},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: mallory}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	cfg := rest.CopyConfig(consumerEnv.cluster.AdminConfig())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: mallory, Groups: []string{"system:authenticated"}}
	attacker, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := attacker.CoreV1().Secrets(tenantNS).List(ctx, metav1.ListOptions{})
		return err == nil
	}, 30*time.Second, 50*time.Millisecond, "the attacker's rights take effect")
	_, err = attacker.CoreV1().ConfigMaps(ns).Get(ctx, kube.PublicKeyRecordName, metav1.GetOptions{})
	require.True(t, apierrors.IsForbidden(err), "the attacker may not touch the key namespace: %v", err)

	attackerKey, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	wrote := make(chan error, 1)
	go func() { wrote <- forgeTenant(ctx, attacker, tenantNS, consumerID, providerID, attackerKey) }()

	r, err := cliErr(t, nil, "authenticate", "--kubeconfig", consumerEnv.kubeconfig, "-n", ns,
		"--remote-kubeconfig", providerEnv.kubeconfig, "--remote-namespace", ns)
	require.NoError(t, <-wrote, "the attacker wrote its Tenant")
	require.ErrorIs(t, err, errUntrustedTenant, r.stderr)
	assert.Equal(t, exitError, r.code)

	// Nothing reached the provider: no Tenant, no CSR.
	err = providerEnv.typed.Get(ctx, client.ObjectKey{Namespace: clusterid.TenantNamespace(consumerID), Name: consumerID}, &authv1beta1.Tenant{})
	require.True(t, apierrors.IsNotFound(err), "no Tenant applied: %v", err)
	csrs, err := providerEnv.client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{LabelSelector: clusterid.Label + "=" + consumerID})
	require.NoError(t, err)
	assert.Empty(t, csrs.Items)
}

// forgeTenant is the attacker: it waits, as user as, for liqo-signed-nonce
// in ns and overwrites its signature and Tenant with its own, signed with
// key for consumerID, answering the nonce for providerID. It returns once
// its write is stored.
func forgeTenant(ctx context.Context, as kubernetes.Interface, ns, consumerID, providerID string, key *keys.PrivateKey) error {
	secrets := as.CoreV1().Secrets(ns)
	w, err := secrets.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", nonce.SignedSecretName).String()})
	if err != nil {
		return err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		s, ok := ev.Object.(*corev1.Secret)
		if !ok || len(s.Data[nonce.SecretKey]) == 0 {
			continue
		}
		n, err := nonce.Parse(string(s.Data[nonce.SecretKey]))
		if err != nil {
			return err
		}
		forged, err := tenant.Build(consumerID, key, n, &tenant.BuildOptions{ProviderID: providerID, Expiry: time.Now().Add(tenant.DefaultTranscriptLifetime)})
		if err != nil {
			return err
		}
		doc, err := yaml.Marshal(forged)
		if err != nil {
			return err
		}
		s.Data[nonce.SignedSecretKey] = forged.Spec.Signature
		s.Data[contract.TenantKey] = doc
		// Held to the version read: it lands before the controller's
		// write, or not at all.
		_, err = secrets.Update(ctx, s, metav1.UpdateOptions{})
		return err
	}
	return ctx.Err()
}

// Without the record of the cluster's public key (a consumer whose
// kubepact-controller predates it), the CLI has nothing trusted to check a
// Tenant against: it says so, and names the fix.
func TestPublishedKeyMissing(t *testing.T) {
	ctx := testContext(t)
	_, err := publishedKey(ctx, &cluster{role: consumerRole, client: consumerEnv.client, namespace: unique("liqo-old")})
	require.ErrorIs(t, err, errNoPublicKey)
	assert.Contains(t, err.Error(), "upgrade the consumer's kubepact-controller")
}
