package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/controllers"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/tenant"
)

// startController runs kubepact's reconcilers (setup) on a cluster, as
// kubepact-controller does: leader-elected with its Lease, which it
// releases when the returned stop is called or the test ends.
func startController(t *testing.T, cfg *rest.Config, setup func(manager.Manager) error) (stop func()) {
	t.Helper()
	scheme, err := controllers.NewScheme()
	require.NoError(t, err)
	mgr, err := ctrl.NewManager(cfg, manager.Options{
		Scheme:                        scheme,
		Logger:                        logr.Discard(),
		Cache:                         controllers.CacheOptions(),
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		LeaderElection:                true,
		LeaderElectionID:              kubepactLease,
		LeaderElectionNamespace:       metav1.NamespaceSystem,
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	require.NoError(t, setup(mgr))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(time.Minute):
			t.Error("the manager did not stop within a minute")
		}
	}
	t.Cleanup(stop)
	return stop
}

// recorder records the requests the CLI sends to one cluster.
type recorder struct {
	role string
	mu   sync.Mutex
	reqs []string // "POST /apis/..."
}

func (r *recorder) wrap(role string, rt http.RoundTripper) http.RoundTripper {
	if role != r.role {
		return rt
	}
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		r.mu.Lock()
		r.reqs = append(r.reqs, req.Method+" "+req.URL.Path)
		r.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

func (r *recorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.reqs...)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// requireNamespaceAbsent checks that the tenant namespace of id does not
// exist on e: nothing was written.
func requireNamespaceAbsent(t *testing.T, ctx context.Context, e *testEnv, id string) {
	t.Helper()
	_, err := e.client.CoreV1().Namespaces().Get(ctx, clusterid.TenantNamespace(id), metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "tenant namespace %s: %v", clusterid.TenantNamespace(id), err)
}

// TestAuthenticateThroughControllers runs authenticate and unauthenticate
// against both clusters with kubepact's controllers running, under both
// provider policies, and checks what the CLI refuses before writing
// anything. Not parallel: the controllers answer every object of their
// kinds in the clusters.
func TestAuthenticateThroughControllers(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	for _, policy := range []tenant.Policy{tenant.Compatible, tenant.Strict} {
		t.Run(policy.String(), func(t *testing.T) {
			testAuthenticateThroughControllers(t, policy)
		})
	}
}

func testAuthenticateThroughControllers(t *testing.T, policy tenant.Policy) {
	ctx := testContext(t)
	// Each cluster records a generated ID, as kubepact-controller does.
	ns := unique("liqo-ctl")
	consumerID, generated, err := kube.EnsureClusterID(ctx, consumerEnv.client, "", &kube.ClusterIDOptions{Namespace: ns})
	require.NoError(t, err)
	require.True(t, generated)
	providerID, _, err := kube.EnsureClusterID(ctx, providerEnv.client, "", &kube.ClusterIDOptions{Namespace: ns})
	require.NoError(t, err)
	require.NoError(t, rbac.Install(ctx, kube.NewRBAC(providerEnv.client)))
	args := func(verb ...string) []string {
		return append(verb, "--kubeconfig", consumerEnv.kubeconfig, "-n", ns, "--remote-kubeconfig", providerEnv.kubeconfig, "--remote-namespace", ns)
	}
	requireNothingWritten := func() {
		t.Helper()
		requireNamespaceAbsent(t, ctx, consumerEnv, providerID)
		requireNamespaceAbsent(t, ctx, providerEnv, consumerID)
	}

	// No controller runs: authenticate writes nothing and says to pass --local.
	r, err := cliErr(t, nil, args("authenticate")...)
	require.ErrorIs(t, err, errNoController)
	assert.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "--local")
	requireNothingWritten()

	startController(t, providerEnv.cluster.AdminConfig(), func(mgr manager.Manager) error {
		return controllers.SetupProvider(mgr, controllers.ProviderConfig{
			ClusterID: providerID,
			Endpoint:  provider.Endpoint{Server: providerEnv.cluster.Host(), CA: providerEnv.cluster.CA()},
			Policy:    policy,
		})
	})
	stopConsumer := startController(t, consumerEnv.cluster.AdminConfig(), func(mgr manager.Manager) error {
		return controllers.SetupConsumer(mgr, controllers.ConsumerConfig{ClusterID: consumerID, KeyNamespace: ns})
	})
	for _, e := range []*testEnv{providerEnv, consumerEnv} {
		require.Eventually(t, func() bool {
			_, err := findController(ctx, e.client, ns)
			return err == nil
		}, time.Minute, 100*time.Millisecond, "the controller holds its Lease on %s", e.cluster.Name())
	}

	// No peering yet: unauthenticate changes nothing and says so.
	r, err = cliErr(t, nil, args("unauthenticate")...)
	require.ErrorIs(t, err, errNotPeered)
	assert.Equal(t, exitError, r.code)
	_, err = cliErr(t, nil, args("unauthenticate", "--local")...)
	require.ErrorIs(t, err, errNotPeered)
	requireNothingWritten()

	// A --remote-cluster-id that is not the provider's: refused, nothing written.
	r, err = cliErr(t, nil, append(args("authenticate"), "--remote-cluster-id", providerID+"-typo")...)
	var conflict *clusterid.ConflictError
	require.ErrorAs(t, err, &conflict)
	assert.Equal(t, providerID, conflict.Recorded)
	assert.Equal(t, exitError, r.code)
	requireNothingWritten()
	// So is a --cluster-id that is not the consumer's, and so in-process.
	_, err = cliErr(t, nil, append(args("authenticate"), "--cluster-id", "cl-someone-else")...)
	require.ErrorIs(t, err, clusterid.ErrConflict)
	_, err = cliErr(t, nil, append(args("authenticate", "--local"), "--remote-cluster-id", providerID+"-typo")...)
	require.ErrorAs(t, err, &conflict)
	_, err = cliErr(t, nil, append(args("unauthenticate", "--local"), "--remote-cluster-id", providerID+"-typo")...)
	require.ErrorAs(t, err, &conflict)
	requireNothingWritten()

	// The consumer holds a signed nonce of another nonce for this provider:
	// refused, as liqoctl refuses it; deleted, the handshake goes on.
	_, err = consumerEnv.client.CoreV1().Namespaces().Create(ctx, tenant.Namespace(providerID), metav1.CreateOptions{})
	require.NoError(t, err)
	stale := nonce.SignedSecret(providerID, newNonce(t), nil)
	delete(stale.Data, nonce.SignedSecretKey)
	_, err = consumerEnv.client.CoreV1().Secrets(stale.Namespace).Create(ctx, stale, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cliErr(t, nil, args("authenticate")...)
	require.ErrorIs(t, err, errNonceMismatch)
	// Deleted once the consumer's controller has signed it, so that no
	// write of the controller races the deletion.
	require.Eventually(t, func() bool {
		s, err := consumerEnv.client.CoreV1().Secrets(stale.Namespace).Get(ctx, stale.Name, metav1.GetOptions{})
		return err == nil && len(s.Data[nonce.SignedSecretKey]) > 0
	}, 30*time.Second, 50*time.Millisecond, "the consumer's controller signs the stale nonce")
	require.NoError(t, consumerEnv.client.CoreV1().Secrets(stale.Namespace).Delete(ctx, stale.Name, metav1.DeleteOptions{}))

	// --key-algorithm is the consumer's controller's: refused before writing.
	r, err = cliErr(t, nil, args("authenticate", "--key-algorithm", "ecdsa-p256")...)
	var usage *usageError
	require.ErrorAs(t, err, &usage)
	assert.Equal(t, exitUsage, r.code)

	// Through the controllers: the CLI never signs, approves or binds on
	// the provider, and never reads the consumer's keys: the consumer's
	// controller builds the Tenant.
	rec, consumerRec := &recorder{role: providerRole}, &recorder{role: consumerRole}
	both := func(role string, rt http.RoundTripper) http.RoundTripper {
		return rec.wrap(role, consumerRec.wrap(role, rt))
	}
	start := time.Now()
	r, err = cliErr(t, &env{wrapTransport: both}, append(args("authenticate"), "--remote-cluster-id", providerID)...)
	require.NoError(t, err, r.stderr)
	assert.Contains(t, r.stderr, " INFO  Tenant built by the consumer's controller\n")
	requireKeysUntouched(t, consumerRec.requests(), ns)
	t.Logf("authenticate through the controllers: %s, %d requests to the provider: %q", time.Since(start).Round(time.Millisecond), len(rec.requests()), rec.requests())
	tenantNS := clusterid.TenantNamespace(consumerID)
	assert.Equal(t, "Kubeconfig Secret liqo-tenant-"+providerID+"/kubeconfig-controlplane-"+providerID+"\n"+
		"  server:    "+providerEnv.cluster.Host()+"\n"+
		"  user:      "+consumerID+"\n"+
		"  namespace: "+tenantNS+"\n", r.stdout)
	for _, step := range []string{"Nonce issued by the provider", "Nonce signed by the consumer", "Tenant accepted by the provider's controller",
		"Kubeconfig Secret written by the consumer's controller"} {
		assert.Contains(t, r.stderr, " INFO  "+step+"\n")
	}
	reqs := rec.requests()
	require.Contains(t, reqs, "PATCH /apis/authentication.liqo.io/v1beta1/namespaces/"+tenantNS+"/tenants/"+consumerID, "the recorder sees the Tenant applied")
	for _, req := range reqs {
		method, path, _ := strings.Cut(req, " ")
		assert.NotContains(t, path, "certificatesigningrequests", "the CLI sent %s", req)
		if method != http.MethodGet {
			assert.NotContains(t, path, "rolebindings", "the CLI sent %s", req)
			assert.NotContains(t, path, "clusterroles", "the CLI sent %s", req)
		}
	}
	// The controllers did: the CSR was made and signed on the provider.
	csrs, err := providerEnv.client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{LabelSelector: clusterid.Label + "=" + consumerID})
	require.NoError(t, err)
	require.NotEmpty(t, csrs.Items)
	// Between kubepact clusters the cluster key stays home: the provider
	// runs kubepact-controller, so the identity got a key of its own, and
	// the consumer's controller applied its certificate.
	requireClusterKeyHome(t, ctx, ns, providerID)

	// get kubeconfig: the peering's kubeconfig passes a SelfSubjectReview on the provider.
	file := filepath.Join(t.TempDir(), "provider.kubeconfig")
	_, err = cliErr(t, nil, "get", "kubeconfig", "--kubeconfig", consumerEnv.kubeconfig, "--remote-cluster-id", providerID, "--output-file", file)
	require.NoError(t, err)
	info, err := os.Stat(file)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	requireReviewed(t, ctx, data, consumerID)
	r, err = runCLI(t, nil, "get", "kubeconfig", "--kubeconfig", consumerEnv.kubeconfig, "--remote-cluster-id", providerID)
	require.NoError(t, err)
	assert.Equal(t, string(data), r.stdout, "the same kubeconfig on standard output")
	_, err = cliErr(t, nil, "get", "kubeconfig", "--kubeconfig", consumerEnv.kubeconfig, "--remote-cluster-id", "cl-nobody")
	require.ErrorIs(t, err, errNoKubeconfig)
	_, err = cliErr(t, nil, "get", "kubeconfig", "--kubeconfig", consumerEnv.kubeconfig, "--remote-cluster-id", providerID, "--resourceslice", "no-such-slice")
	require.ErrorIs(t, err, errNoKubeconfig)

	// get tenant|identity -o json decode into the API types; the tables name the peers.
	r, err = cliErr(t, nil, "get", "tenant", consumerID, "--kubeconfig", providerEnv.kubeconfig, "-o", "json")
	require.NoError(t, err)
	var got authv1beta1.Tenant
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	assert.Equal(t, authv1beta1.TenantKind, got.Kind)
	assert.Equal(t, consumerID, got.Spec.ClusterID)
	require.NotNil(t, got.Status.AuthParams)
	assert.Empty(t, got.ManagedFields)
	r, err = cliErr(t, nil, "get", "identity", providerID, "--kubeconfig", consumerEnv.kubeconfig, "-o", "json")
	require.NoError(t, err)
	var ids authv1beta1.IdentityList
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &ids))
	require.Len(t, ids.Items, 1)
	assert.Equal(t, identity.ControlPlaneName(providerID), ids.Items[0].Name)
	assert.Equal(t, authv1beta1.IdentityKind, ids.Items[0].Kind)
	r, err = cliErr(t, nil, "get", "identity", providerID, "--kubeconfig", consumerEnv.kubeconfig, "-o", "name")
	require.NoError(t, err)
	assert.Equal(t, "identity.authentication.liqo.io/"+identity.ControlPlaneName(providerID)+"\n", r.stdout)
	r, err = cliErr(t, nil, "get", "tenant", consumerID, "--kubeconfig", providerEnv.kubeconfig, "-o", "jsonpath={.spec.clusterID}")
	require.NoError(t, err)
	assert.Equal(t, consumerID, r.stdout)
	r, err = cliErr(t, nil, "get", "tenant", "--kubeconfig", providerEnv.kubeconfig)
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^NAME\s+NAMESPACE\s+CONDITION\s+CERTIFICATE EXPIRES\s+AGE$`, r.stdout)
	assert.Regexp(t, `(?m)^`+consumerID+`\s+`+tenantNS+`\s+Active\s+\d{4}-`, r.stdout)

	// get nonce -o prints the nonce Secret, which decodes as one.
	r, err = cliErr(t, nil, "get", "nonce", "--kubeconfig", providerEnv.kubeconfig, "-n", ns, "--remote-cluster-id", consumerID, "-o", "json")
	require.NoError(t, err)
	var nonceSecret corev1.Secret
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &nonceSecret))
	assert.Equal(t, nonce.SecretName, nonceSecret.Name)
	assert.Len(t, nonceSecret.Data[nonce.SecretKey], 88)

	// status: one table of peers, on each side.
	r, err = cliErr(t, nil, "status", "--kubeconfig", consumerEnv.kubeconfig)
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^PEER\s+ROLE\s+CONDITION\s+GITOPS\s+CERTIFICATE EXPIRES\s+LAST ERROR$`, r.stdout)
	assert.Regexp(t, `(?m)^`+providerID+`\s+provider\s+Ready\s+-\s+\d{4}-\S+\s+-$`, r.stdout)
	r, err = cliErr(t, nil, "status", "--kubeconfig", providerEnv.kubeconfig)
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^`+consumerID+`\s+consumer\s+Active\s+-\s+\d{4}-\S+\s+-$`, r.stdout)

	// An unknown provider for --force: nothing changes, and it says so.
	_, err = cliErr(t, nil, "unauthenticate", "--force", "--kubeconfig", consumerEnv.kubeconfig, "-n", ns, "--remote-cluster-id", "cl-unknown-provider")
	require.ErrorIs(t, err, errNotPeered)
	var held authv1beta1.Identity
	require.NoError(t, consumerEnv.typed.Get(ctx, client.ObjectKey{Namespace: clusterid.TenantNamespace(providerID), Name: identity.ControlPlaneName(providerID)}, &held))

	// A ResourceSlice still uses the peering: unauthenticate refuses and
	// changes nothing; once the slice is gone, it proceeds.
	onConsumer := []string{"--kubeconfig", consumerEnv.kubeconfig, "-n", ns, "--remote-cluster-id", providerID}
	_, err = cliErr(t, nil, append([]string{"create", "resourceslice", "slice-ctl"}, onConsumer...)...)
	require.NoError(t, err)
	r, err = cliErr(t, nil, args("unauthenticate")...)
	require.ErrorIs(t, err, consumer.ErrInUse)
	assert.Contains(t, r.stderr, "delete those ResourceSlices")
	require.NoError(t, consumerEnv.typed.Get(ctx, client.ObjectKey{Namespace: clusterid.TenantNamespace(providerID), Name: identity.ControlPlaneName(providerID)}, &held))
	_, err = cliErr(t, nil, append([]string{"delete", "resourceslice", "slice-ctl"}, onConsumer...)...)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		err := consumerEnv.typed.Get(ctx, client.ObjectKey{Namespace: clusterid.TenantNamespace(providerID), Name: "slice-ctl"}, &authv1beta1.ResourceSlice{})
		return apierrors.IsNotFound(err)
	}, time.Minute, 100*time.Millisecond, "the consumer's controller lets the slice go")

	// unauthenticate through the controllers.
	r, err = cliErr(t, nil, args("unauthenticate")...)
	require.NoError(t, err, r.stderr)
	assert.Equal(t, "Consumer "+consumerID+" is no longer authenticated on provider "+providerID+"\n", r.stdout)
	err = providerEnv.typed.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: consumerID}, &authv1beta1.Tenant{})
	assert.True(t, apierrors.IsNotFound(err), "the Tenant is gone: %v", err)
	_, err = consumerEnv.client.CoreV1().Secrets(clusterid.TenantNamespace(providerID)).Get(ctx,
		kubeconfig.SecretName(identity.ControlPlaneName(providerID)), metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the kubeconfig Secret is gone: %v", err)

	// Peering again works (the provider kept the nonce, as Liqo does), as
	// a user who may not read the consumer's key Secret at all; revoked,
	// the consumer is refused by the provider's controller, and the CLI
	// says why at once rather than at its timeout.
	peerer := allowPeeringWithoutKeys(t, ctx, providerID, ns)
	r, err = cliErr(t, nil, append(args("authenticate"), "--as", peerer)...)
	require.NoError(t, err, r.stderr)
	assert.Contains(t, r.stderr, " INFO  Tenant built by the consumer's controller\n")
	r, err = cliErr(t, nil, args("unauthenticate", "--revoke")...)
	require.NoError(t, err, r.stderr)
	assert.Contains(t, r.stdout, "recorded as revoked")
	start = time.Now()
	r, err = cliErr(t, nil, append(args("authenticate"), "--timeout", "90s")...)
	var refused *RefusedError
	require.ErrorAs(t, err, &refused, r.stderr)
	require.ErrorIs(t, err, errRefused)
	assert.Equal(t, contract.ReasonConsumerRevoked, refused.Reason)
	assert.Less(t, time.Since(start), 60*time.Second)
	t.Logf("a revoked consumer refused in %s", time.Since(start).Round(time.Millisecond))
	r, err = cliErr(t, nil, "status", "--kubeconfig", providerEnv.kubeconfig)
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^`+consumerID+`\s+consumer\s+Pending\s+-\s+-\s+ConsumerRevoked: `, r.stdout, "the last error of the peer")

	// The consumer's controller stopped: authenticate refuses again, before writing.
	stopConsumer()
	_, err = cliErr(t, nil, args("authenticate")...)
	require.ErrorIs(t, err, errNoController)
}

// runCLI runs the CLI as cliErr does, but lets its output hold a
// kubeconfig: for get kubeconfig, which prints one when asked.
func runCLI(t testing.TB, e *env, args ...string) (result, error) {
	t.Helper()
	var stdout, stderr strings.Builder
	if e == nil {
		e = &env{}
	}
	e.stdin, e.stdout, e.stderr = strings.NewReader(""), &stdout, &stderr
	cmd, err := execute(context.Background(), e, args)
	code := report(e, cmd, err)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}, err
}

// requireReviewed checks that the kubeconfig data authenticates on the
// provider as the consumer.
func requireReviewed(t *testing.T, ctx context.Context, data []byte, consumerID string) {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, consumerID, review.Status.UserInfo.Username)
}

// requireKeysUntouched checks that none of the requests the CLI sent to the
// consumer touched a Secret of the key namespace keyNS, where the cluster
// key (authentication-keys) and the identity keys live.
func requireKeysUntouched(t *testing.T, reqs []string, keyNS string) {
	t.Helper()
	require.NotEmpty(t, reqs)
	for _, req := range reqs {
		assert.NotContains(t, req, keys.SecretName, "the CLI sent %s", req)
		assert.NotContains(t, req, "/namespaces/"+keyNS+"/secrets", "the CLI sent %s", req)
		_, path, _ := strings.Cut(req, " ")
		assert.NotEqual(t, "/api/v1/secrets", path, "the CLI sent %s", req)
	}
}

// allowPeeringWithoutKeys returns a user of the consumer allowed what
// authenticate through kubepact's controllers needs there, but no Secret
// outside the tenant namespace of providerID: not the cluster key's, in
// keyNS, which it is checked to be refused.
func allowPeeringWithoutKeys(t *testing.T, ctx context.Context, providerID, keyNS string) string {
	t.Helper()
	user := "peerer-" + providerID
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	cr := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"namespaces", "configmaps", "events"}, Verbs: all},
			{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: all},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{authv1beta1.SchemeGroupVersion.Group}, Resources: []string{"*"}, Verbs: all},
		},
	}
	_, err := consumerEnv.client.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = consumerEnv.client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	tenantNS := clusterid.TenantNamespace(providerID)
	_, err = consumerEnv.client.RbacV1().Roles(tenantNS).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: all}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = consumerEnv.client.RbacV1().RoleBindings(tenantNS).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		_ = consumerEnv.client.RbacV1().ClusterRoleBindings().Delete(ctx, user, metav1.DeleteOptions{})
		_ = consumerEnv.client.RbacV1().ClusterRoles().Delete(ctx, user, metav1.DeleteOptions{})
	})

	// The user may not read the key Secret: the proof that authenticate
	// does not need it.
	cfg := rest.CopyConfig(consumerEnv.cluster.AdminConfig())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	as, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := as.CoreV1().Secrets(tenantNS).List(ctx, metav1.ListOptions{})
		return err == nil
	}, 30*time.Second, 50*time.Millisecond, "the user's rights take effect")
	_, err = as.CoreV1().Secrets(keyNS).Get(ctx, keys.SecretName, metav1.GetOptions{})
	require.True(t, apierrors.IsForbidden(err), "reading the key Secret: %v", err)
	_, err = as.CoreV1().Secrets(keyNS).List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "listing the key namespace's Secrets: %v", err)
	return user
}

// requireClusterKeyHome checks that the kubeconfig Secret the consumer holds
// for providerID authenticates with the ControlPlane identity's own key, kept
// in the keyring of keyNS, and holds nothing of the cluster key.
func requireClusterKeyHome(t *testing.T, ctx context.Context, keyNS, providerID string) {
	t.Helper()
	s, err := consumerEnv.client.CoreV1().Secrets(clusterid.TenantNamespace(providerID)).Get(ctx,
		kubeconfig.SecretName(identity.ControlPlaneName(providerID)), metav1.GetOptions{})
	require.NoError(t, err)
	clusterKey, err := kube.NewKeyStore(consumerEnv.client, keyNS).Get(ctx)
	require.NoError(t, err)
	pemBytes, err := keys.MarshalPrivateKey(clusterKey)
	require.NoError(t, err)
	for k, v := range s.Data {
		assert.NotContains(t, string(v), string(pemBytes), "data %s holds the cluster key", k)
		assert.NotContains(t, string(v), base64.StdEncoding.EncodeToString(pemBytes), "data %s holds the cluster key", k)
	}
	cfg, err := kubeconfig.Parse(s.Data[kubeconfig.SecretKey])
	require.NoError(t, err)
	rc, err := cfg.RESTConfig()
	require.NoError(t, err)
	tlsKey, err := keys.ParsePrivateKey(rc.KeyData)
	require.NoError(t, err)
	assert.False(t, keys.Equal(clusterKey.Public(), tlsKey.Public()), "the kubeconfig's key is the cluster key")
	own, err := kube.NewKeyring(consumerEnv.client, keyNS).Get(ctx, identity.ControlPlaneName(providerID))
	require.NoError(t, err)
	assert.True(t, keys.Equal(own.Key.Public(), tlsKey.Public()), "the kubeconfig's key is the identity's own")
}
