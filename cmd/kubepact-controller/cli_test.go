package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/internal/testenv"
	"github.com/kubepact/kubepact/kubeconfig"
)

var (
	cliOnce sync.Once
	cliPath string
	cliErr  error
)

// kubepactCLI builds the kubepact CLI once and returns its path.
func kubepactCLI(t testing.TB) string {
	t.Helper()
	env := testenv.New(t, testenv.Options{Go: true})
	cliOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kubepact-cli")
		if err != nil {
			cliErr = err
			return
		}
		cliPath = filepath.Join(dir, "kubepact")
		build := exec.Command("go", "build", "-o", cliPath, "../kubepact")
		build.Env = env
		out, err := build.CombinedOutput()
		if err != nil {
			cliErr = &exec.ExitError{Stderr: out}
		}
	})
	require.NoError(t, cliErr, "building the CLI")
	return cliPath
}

// runCLI runs the CLI with args and stdin, in an environment of its own (no
// kubeconfig but the one args name), and returns its stdout; it fails t
// unless the CLI succeeds.
func runCLI(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubepactCLI(t), args...)
	cmd.Env = testenv.New(t, testenv.Options{})
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "kubepact %s\nstderr:\n%s", strings.Join(args, " "), stderr.String())
	return string(out)
}

// requireKubeconfigWorks checks the kubeconfig Secret the consumer cluster
// holds for providerID on the provider.
func requireKubeconfigWorks(ctx context.Context, t *testing.T, providerID, consumerID string) {
	t.Helper()
	name := kubeconfig.SecretName(identity.ControlPlaneName(providerID))
	s, err := consumerEnv.admin.CoreV1().Secrets(clusterid.TenantNamespace(providerID)).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	cfg, err := kubeconfig.Parse(s.Data[kubeconfig.SecretKey])
	require.NoError(t, err)
	require.Equal(t, consumerID, cfg.User())
	rc, err := cfg.RESTConfig()
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(rc)
	require.NoError(t, err)
	_, err = dyn.Resource(authv1beta1.SchemeGroupVersion.WithResource(authv1beta1.ResourceSliceResource)).
		Namespace(clusterid.TenantNamespace(consumerID)).List(ctx, metav1.ListOptions{})
	require.NoError(t, err, "the kubeconfig works on the provider")
}

// TestCLIAgainstControllers runs the CLI's online and offline flows on
// clusters whose kubepact-controllers answer the same objects, under each
// policy of the provider: the CLI and the controllers converge on one
// Tenant, one Identity and a working kubeconfig.
func TestCLIAgainstControllers(t *testing.T) {
	dir := t.TempDir()
	providerKubeconfig := filepath.Join(dir, "provider.kubeconfig")
	consumerKubeconfig := filepath.Join(dir, "consumer.kubeconfig")
	require.NoError(t, os.WriteFile(providerKubeconfig, providerEnv.cluster.AdminKubeconfig(), 0o600))
	require.NoError(t, os.WriteFile(consumerKubeconfig, consumerEnv.cluster.AdminKubeconfig(), 0o600))
	caFile := writeFile(t, providerEnv.cluster.CA())
	const consumerID = "cl-cli-consumer"

	for _, policy := range []string{"compatible", "strict"} {
		t.Run(policy, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			providerID := "cl-cli-provider-" + policy
			p := start(t, providerEnv, "--cluster-id="+providerID, "--roles=provider", "--policy="+policy,
				"--api-server-url="+providerEnv.cluster.Host(), "--api-server-ca-file="+caFile,
				"--leader-elect=false", "--metrics-bind-address=0", "--health-probe-bind-address=0")
			c := start(t, consumerEnv, "--cluster-id="+consumerID, "--roles=consumer",
				"--leader-elect=false", "--metrics-bind-address=0", "--health-probe-bind-address=0")
			ids := []string{"--cluster-id", consumerID, "--remote-cluster-id", providerID}

			// Online, in the CLI's process (--local), beside the
			// controllers answering the same objects.
			runCLI(t, "", append([]string{"authenticate", "--local", "--kubeconfig", consumerKubeconfig, "--remote-kubeconfig", providerKubeconfig, "--policy", policy}, ids...)...)
			requireKubeconfigWorks(ctx, t, providerID, consumerID)
			runCLI(t, "", append([]string{"unauthenticate", "--local", "--kubeconfig", consumerKubeconfig, "--remote-kubeconfig", providerKubeconfig}, ids...)...)

			// Offline: files moved by hand. The consumer forgotten above is
			// readmitted first: its certificate may still be valid.
			onProvider := []string{"--kubeconfig", providerKubeconfig, "--cluster-id", providerID}
			runCLI(t, "", append([]string{"readmit", "tenant", "--remote-cluster-id", consumerID}, onProvider...)...)
			onConsumer := []string{"--kubeconfig", consumerKubeconfig, "--cluster-id", consumerID}
			n := strings.TrimSpace(runCLI(t, "", append([]string{"create", "nonce", "--remote-cluster-id", consumerID}, onProvider...)...))
			tn := runCLI(t, "", append([]string{"generate", "tenant", "--remote-cluster-id", providerID, "--nonce", n}, onConsumer...)...)
			runCLI(t, tn, append([]string{"apply", "tenant", "-"}, onProvider...)...)
			id := runCLI(t, "", append([]string{"generate", "identity", "--remote-cluster-id", consumerID, "--policy", policy}, onProvider...)...)
			runCLI(t, id, append([]string{"apply", "identity", "--remote-cluster-id", providerID, "-"}, onConsumer...)...)
			requireKubeconfigWorks(ctx, t, providerID, consumerID)
			// The controller filled the Tenant's status too, and stays quiet.
			tenant, err := providerEnv.dynamic.Resource(authv1beta1.SchemeGroupVersion.WithResource(authv1beta1.TenantResource)).
				Namespace(clusterid.TenantNamespace(consumerID)).Get(ctx, consumerID, metav1.GetOptions{})
			require.NoError(t, err)
			_, found, _ := unstructured.NestedString(tenant.Object, "status", "tenantNamespace")
			require.True(t, found, "the Tenant's status")
			runCLI(t, "", append([]string{"unauthenticate", "--local", "--kubeconfig", consumerKubeconfig, "--remote-kubeconfig", providerKubeconfig}, ids...)...)
			runCLI(t, "", append([]string{"readmit", "tenant", "--remote-cluster-id", consumerID}, onProvider...)...)
			p.stop()
			c.stop()
		})
	}
}
