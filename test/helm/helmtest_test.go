package helm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/release"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/kubepact/kubepact/clusterid"
)

// helmTestAccount is the ServiceAccount the chart's helm test hook runs as.
const helmTestAccount = "kubepact-helm-test"

var (
	cliOnce sync.Once
	cliBin  string
	cliErr  error
)

// kubepactCLI builds cmd/kubepact once and returns its path.
func kubepactCLI(t *testing.T) string {
	t.Helper()
	cliOnce.Do(func() {
		cliBin = filepath.Join(workDir, "kubepact")
		build := exec.Command("go", "build", "-o", cliBin, "./cmd/kubepact")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			cliErr = fmt.Errorf("go build ./cmd/kubepact: %w\n%s", err, out)
		}
	})
	require.NoError(t, cliErr)
	return cliBin
}

// accountKubeconfig writes a kubeconfig of e that impersonates the
// ServiceAccount namespace/name, with its groups, as a pod running as it
// authenticates, and namespace as the context's.
func accountKubeconfig(t *testing.T, e *env, namespace, name string) string {
	t.Helper()
	cfg, err := clientcmd.Load(e.cluster.AdminKubeconfig())
	require.NoError(t, err)
	for _, a := range cfg.AuthInfos {
		a.Impersonate = "system:serviceaccount:" + namespace + ":" + name
		a.ImpersonateGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
	}
	for _, c := range cfg.Contexts {
		c.Namespace = namespace
	}
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// testHookPod returns the Pod of rel's helm test hook.
func testHookPod(t *testing.T, rel *release.Release) *corev1.Pod {
	t.Helper()
	var pods []*corev1.Pod
	for _, h := range rel.Hooks {
		for _, ev := range h.Events {
			if ev == release.HookTest && h.Kind == "Pod" {
				var p corev1.Pod
				require.NoError(t, yaml.UnmarshalStrict([]byte(h.Manifest), &p), "%s", h.Manifest)
				pods = append(pods, &p)
			}
		}
	}
	require.Len(t, pods, 1, "one helm test Pod")
	return pods[0]
}

// TestHelmTestHookImage: with no other value, the hook runs the CLI the
// controller's image holds, /kubepact (hack/image.sh and the Dockerfile put
// it there), from the Deployment's own image: by tag, by digest when one is
// set, with its pull policy, and following image.repository and image.tag.
// helmTest.image.repository names another image instead, whose kubepact is
// on its PATH, at helmTest.image.tag or else image.tag.
func TestHelmTestHookImage(t *testing.T) {
	t.Parallel()
	ch := loadChart(t, chartDir)
	digest := "sha256:" + strings.Repeat("ab", 32)
	for _, tt := range []struct {
		name    string
		vals    []any // besides helmTest.enabled
		image   string
		command string
		policy  corev1.PullPolicy
	}{
		{"the controller's image", nil, "ghcr.io/kubepact/kubepact-controller:" + version(t), "/kubepact", ""},
		{"the controller's image by digest", []any{"image.digest", digest, "image.pullPolicy", "IfNotPresent"},
			"ghcr.io/kubepact/kubepact-controller@" + digest, "/kubepact", corev1.PullIfNotPresent},
		{"the controller's image from a mirror", []any{"image.repository", "mirror.example:5000/kubepact-controller", "image.tag", "v9.9.9"},
			"mirror.example:5000/kubepact-controller:v9.9.9", "/kubepact", ""},
		{"another image at the chart's tag", []any{"helmTest.image.repository", "registry.example/kubepact", "image.pullPolicy", "Always"},
			"registry.example/kubepact:" + version(t), "kubepact", ""},
		{"another image at its tag", []any{"helmTest.image.repository", "registry.example/kubepact", "helmTest.image.tag", "v1.2.3", "image.digest", digest},
			"registry.example/kubepact:v1.2.3", "kubepact", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rel, err := renderRelease(ch, values(append([]any{"helmTest.enabled", true}, tt.vals...)...))
			require.NoError(t, err)
			pod := testHookPod(t, rel)
			require.Len(t, pod.Spec.Containers, 1)
			c := pod.Spec.Containers[0]
			assert.Equal(t, tt.image, c.Image)
			assert.Equal(t, tt.policy, c.ImagePullPolicy)
			assert.Equal(t, []string{tt.command, "status", "--timeout=1m"}, c.Command)
			assert.Empty(t, c.Args)
			if tt.command == "/kubepact" {
				d := deploymentOf(t, manifestObjects(t, rel.Manifest))
				assert.Equal(t, d.Spec.Template.Spec.Containers[0].Image, c.Image, "the Deployment's image")
			}
		})
	}
}

// TestHelmTestHook installs the chart with its helm test hook on, as it
// ships (the CLI of the controller's image), and a controller running as
// the Deployment would, answering a peer. The test clusters run no pods, so
// the test runs the hook Pod's command itself, kubepact built from this
// repository, as the hook's ServiceAccount: it passes and lists the peer. The same command as a ServiceAccount without
// the release's binding fails, so the check reads what it says. The hook's
// ServiceAccount may list Tenants, Identities, Events and the peering kinds
// and nothing more: no Secret, no Deployment, no write. helm uninstall removes its RBAC.
func TestHelmTestHook(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p, _ := clusters(t)
	t.Cleanup(func() { wipe(t, p) })
	publishClusterInfo(ctx, t, p)
	h := newHelm(t, p, releaseNamespace)
	ch := loadChart(t, chartDir)

	rel, err := h.install(ctx, releaseName, ch, values("helmTest.enabled", true))
	require.NoError(t, err)
	require.Equal(t, release.StatusDeployed, rel.Info.Status)
	requireReleaseObjects(ctx, t, p, rel)
	ctrl := startController(t, p, releaseNamespace, deploymentArgs(t, rel.Manifest))
	ctrl.waitReady(t)
	pr := handshake(ctx, t, p)

	pod := testHookPod(t, rel)
	assert.Equal(t, helmTestAccount, pod.Spec.ServiceAccountName)
	assert.Equal(t, releaseNamespace, pod.Namespace)
	assert.Equal(t, corev1.RestartPolicyNever, pod.Spec.RestartPolicy)
	require.Len(t, pod.Spec.Containers, 1)
	c := pod.Spec.Containers[0]
	assert.Equal(t, "ghcr.io/kubepact/kubepact-controller:"+version(t), c.Image, "the controller's image")
	require.NotEmpty(t, c.Command)
	require.Equal(t, "/kubepact", c.Command[0], "the hook runs the kubepact CLI of the controller's image")
	argv := append(append([]string{}, c.Command[1:]...), c.Args...)

	run := func(account string) (string, error) {
		cmd := exec.CommandContext(ctx, kubepactCLI(t), argv...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+accountKubeconfig(t, p, releaseNamespace, account), "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run(helmTestAccount)
	require.NoError(t, err, "kubepact %s as %s:\n%s", strings.Join(argv, " "), helmTestAccount, out)
	assert.Contains(t, out, pr.consumerID, "the check lists the peer")
	t.Logf("kubepact %s as %s:\n%s", strings.Join(argv, " "), helmTestAccount, out)

	// Without the release's binding, the same check fails.
	_, err = p.admin.CoreV1().ServiceAccounts(releaseNamespace).Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: "unbound"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	out, err = run("unbound")
	require.Error(t, err, "the check as a ServiceAccount with no rights:\n%s", out)
	assert.Contains(t, out, "forbidden")

	// Least privilege: what the check needs, and nothing else.
	user := "system:serviceaccount:" + releaseNamespace + ":" + helmTestAccount
	can := func(ra authorizationv1.ResourceAttributes) bool {
		r, err := p.admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &ra,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + releaseNamespace, "system:authenticated"}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		return r.Status.Allowed
	}
	tenantNS := clusterid.TenantNamespace(pr.consumerID)
	for _, ra := range []authorizationv1.ResourceAttributes{
		{Verb: "list", Group: "authentication.liqo.io", Resource: "tenants"},
		{Verb: "list", Group: "authentication.liqo.io", Resource: "identities"},
		{Verb: "list", Group: "events.k8s.io", Resource: "events", Namespace: tenantNS},
		{Verb: "list", Group: "peering.kubepact.io", Resource: "authorizedconsumers"},
		{Verb: "list", Group: "peering.kubepact.io", Resource: "trustedproviders"},
	} {
		assert.True(t, can(ra), "%s may %s %s", helmTestAccount, ra.Verb, ra.Resource)
	}
	for _, ra := range []authorizationv1.ResourceAttributes{
		{Verb: "get", Resource: "secrets", Namespace: releaseNamespace},
		{Verb: "list", Resource: "secrets", Namespace: releaseNamespace},
		{Verb: "list", Resource: "secrets", Namespace: liqoNamespace},
		{Verb: "get", Resource: "secrets", Namespace: tenantNS},
		{Verb: "list", Resource: "secrets"},
		{Verb: "watch", Resource: "secrets"},
		{Verb: "list", Resource: "configmaps", Namespace: liqoNamespace},
		{Verb: "list", Group: "apps", Resource: "deployments"},
		{Verb: "get", Group: "authentication.liqo.io", Resource: "tenants", Namespace: tenantNS},
		{Verb: "watch", Group: "authentication.liqo.io", Resource: "tenants"},
		{Verb: "create", Group: "authentication.liqo.io", Resource: "tenants", Namespace: tenantNS},
		{Verb: "update", Group: "authentication.liqo.io", Resource: "tenants", Namespace: tenantNS},
		{Verb: "delete", Group: "authentication.liqo.io", Resource: "identities", Namespace: tenantNS},
		{Verb: "update", Group: "authentication.liqo.io", Resource: "tenants", Subresource: "status", Namespace: tenantNS},
		{Verb: "create", Group: "events.k8s.io", Resource: "events", Namespace: tenantNS},
		{Verb: "create", Group: "certificates.k8s.io", Resource: "certificatesigningrequests"},
		{Verb: "create", Resource: "serviceaccounts", Subresource: "token", Namespace: releaseNamespace},
		{Verb: "impersonate", Resource: "serviceaccounts"},
		{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
		// The peering kinds are read, never written: writing one would grant
		// a peering (AuthorizedConsumer) or make the controller contact a
		// URL (TrustedProvider).
		{Verb: "watch", Group: "peering.kubepact.io", Resource: "authorizedconsumers"},
		{Verb: "create", Group: "peering.kubepact.io", Resource: "authorizedconsumers"},
		{Verb: "update", Group: "peering.kubepact.io", Resource: "authorizedconsumers"},
		{Verb: "patch", Group: "peering.kubepact.io", Resource: "authorizedconsumers", Subresource: "status"},
		{Verb: "delete", Group: "peering.kubepact.io", Resource: "authorizedconsumers"},
		{Verb: "create", Group: "peering.kubepact.io", Resource: "trustedproviders"},
		{Verb: "patch", Group: "peering.kubepact.io", Resource: "trustedproviders"},
		{Verb: "update", Group: "peering.kubepact.io", Resource: "trustedproviders", Subresource: "status"},
		{Verb: "delete", Group: "peering.kubepact.io", Resource: "trustedproviders"},
	} {
		assert.False(t, can(ra), "%s may not %s %s/%s in %q", helmTestAccount, ra.Verb, ra.Resource, ra.Subresource, ra.Namespace)
	}
	// And as the API server answers it, not only as it reviews it.
	saConfig, err := clientcmd.BuildConfigFromFlags("", accountKubeconfig(t, p, releaseNamespace, helmTestAccount))
	require.NoError(t, err)
	sa, err := kubernetes.NewForConfig(saConfig)
	require.NoError(t, err)
	_, err = sa.CoreV1().Secrets(releaseNamespace).List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "listing Secrets as %s: %v", helmTestAccount, err)
	_, err = sa.CoreV1().Secrets(liqoNamespace).Get(ctx, "authentication-keys", metav1.GetOptions{})
	assert.True(t, apierrors.IsForbidden(err), "reading the cluster key as %s: %v", helmTestAccount, err)

	// helm uninstall removes the hook's ServiceAccount and RBAC.
	_, err = h.uninstall(releaseName)
	require.NoError(t, err)
	require.NoError(t, ctrl.stop(t))
	_, err = p.admin.RbacV1().ClusterRoles().Get(ctx, helmTestAccount, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "ClusterRole %s removed with the release: %v", helmTestAccount, err)
	_, err = p.admin.RbacV1().ClusterRoleBindings().Get(ctx, helmTestAccount, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "ClusterRoleBinding %s removed with the release: %v", helmTestAccount, err)
	deleteAndWait(ctx, t, p, nil, []string{releaseNamespace})
	removeTenantFinalizers(ctx, t, p)
	deleteAndWait(ctx, t, p, authCRDs(ctx, t, p), tenantNamespaces(ctx, t, p, liqoNamespace))
}
