package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/internal/testcluster"
	"github.com/kubepact/kubepact/internal/testenv"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/rbac"
)

// TestREADMECLIBlock runs the CLI's usage blocks as written: the README's
// second sh block under "## The CLI", and the block of docs/older-flows.md's
// "## Where no controller runs: --local and offline", with bash, in a directory
// holding provider.kubeconfig and consumer.kubeconfig, the admin
// kubeconfigs of two clusters of its own, and with the kubepact binary
// built from this package first on the PATH.
//
// Each block runs where its words say it runs. First the block for
// clusters where no controller runs, on two fresh clusters: no CRDs, no
// peer roles, no recorded cluster ID, so the IDs its flags give are the
// clusters'. Then, on the same clusters, as config/ installs kubepact
// (CRDs, peer roles, then kubepact-controller records a new cluster ID
// and runs its reconcilers under it), the block for clusters whose
// controllers run, which reads the IDs from the clusters. Not parallel:
// the controllers' metrics are the process's.
func TestREADMECLIBlock(t *testing.T) {
	blocks := readmeBlocks(t, "## The CLI")
	require.Len(t, blocks, 2, "the install block, then the usage through the controllers")
	withControllers := blocks[1]
	without := readmeBlocks(t, "## Where no controller runs: --local and offline")
	require.Len(t, without, 1, "the usage without controllers")
	withoutControllers := without[0]
	require.Contains(t, withControllers, "kubepact authenticate --kubeconfig consumer.kubeconfig --remote-kubeconfig provider.kubeconfig")
	require.Contains(t, withoutControllers, "kubepact authenticate --local")
	require.Contains(t, withoutControllers, "kubepact apply identity")
	ctrl.SetLogger(logr.Discard())
	ctx := testContext(t)
	begin := time.Now()

	// The binary is built while the clusters start.
	bin := t.TempDir()
	build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(bin, "kubepact"), ".")
	build.Env = testenv.New(t, testenv.Options{Go: true})
	var buildOut strings.Builder
	build.Stdout, build.Stderr = &buildOut, &buildOut
	require.NoError(t, build.Start())
	clusters, err := testcluster.StartAllWith(ctx, testcluster.Options{NoPeerRoles: true}, "readme-provider", "readme-consumer")
	require.NoError(t, err)
	t.Cleanup(func() { _ = testcluster.StopAll(clusters) })
	require.NoError(t, build.Wait(), "go build: %s", &buildOut)
	p, c := clusters[0], clusters[1]
	pClient, err := kubernetes.NewForConfig(p.AdminConfig())
	require.NoError(t, err)
	cClient, err := kubernetes.NewForConfig(c.AdminConfig())
	require.NoError(t, err)
	dir := t.TempDir()
	for name, cl := range map[string]*testcluster.Cluster{"provider.kubeconfig": p, "consumer.kubeconfig": c} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), cl.AdminKubeconfig(), 0o600))
	}
	t.Logf("two fresh clusters and the binary in %s", time.Since(begin).Round(time.Millisecond))

	// No controller runs: the peer roles, the CRDs and the IDs come from
	// the block itself.
	runREADMEBlock(t, ctx, dir, bin, "without controllers", withoutControllers)
	pTyped, err := kube.NewClient(p.AdminConfig(), nil)
	require.NoError(t, err)
	tn, err := kube.NewTenantStore(pTyped).Get(ctx, clusterid.TenantNamespace("cl-consumer"), "cl-consumer")
	require.NoError(t, err, "the provider holds the Tenant of cl-consumer")
	assert.Empty(t, tn.Finalizers, "no controller would remove a finalizer")
	s, err := cClient.CoreV1().Secrets(clusterid.TenantNamespace("cl-provider")).Get(ctx,
		kubeconfig.SecretName(identity.ControlPlaneName("cl-provider")), metav1.GetOptions{})
	require.NoError(t, err, "the consumer holds the kubeconfig Secret for cl-provider")
	requireReviewed(t, ctx, s.Data[kubeconfig.SecretKey], "cl-consumer")

	// As config/ installs kubepact on both clusters: the CRDs and the peer
	// roles, then kubepact-controller, which records a new cluster ID (the
	// clusters record none) and runs under it.
	var ids [2]string
	for i, e := range []struct {
		cluster *testcluster.Cluster
		client  kubernetes.Interface
	}{{p, pClient}, {c, cClient}} {
		require.NoError(t, kube.InstallCRDs(ctx, e.cluster.AdminConfig()))
		require.NoError(t, rbac.Install(ctx, kube.NewRBAC(e.client)))
		id, recorded, err := kube.EnsureClusterID(ctx, e.client, "", nil)
		require.NoError(t, err)
		require.True(t, recorded, "%s recorded no ID before", e.cluster.Name())
		ids[i] = id
	}
	providerID, consumerID := ids[0], ids[1]
	startController(t, p.AdminConfig(), func(mgr manager.Manager) error {
		return controllers.SetupProvider(mgr, controllers.ProviderConfig{
			ClusterID: providerID,
			Endpoint:  provider.Endpoint{Server: p.Host(), CA: p.CA()},
		})
	})
	startController(t, c.AdminConfig(), func(mgr manager.Manager) error {
		return controllers.SetupConsumer(mgr, controllers.ConsumerConfig{ClusterID: consumerID})
	})
	for _, cs := range []kubernetes.Interface{pClient, cClient} {
		require.Eventually(t, func() bool {
			_, err := findController(ctx, cs, "liqo")
			return err == nil
		}, time.Minute, 100*time.Millisecond, "the controller holds its Lease")
	}

	out := runREADMEBlock(t, ctx, dir, bin, "through the controllers", withControllers)
	assert.Contains(t, out, "Consumer "+consumerID+" is no longer authenticated on provider "+providerID+"\n")
	// The kubeconfig get kubeconfig wrote authenticates on the provider as
	// the consumer (a certificate stays valid after the unpeering; its
	// bindings are gone).
	data, err := os.ReadFile(filepath.Join(dir, "peering.kubeconfig"))
	require.NoError(t, err)
	requireReviewed(t, ctx, data, consumerID)
	t.Logf("TestREADMECLIBlock: %s in all", time.Since(begin).Round(time.Millisecond))
}

// runREADMEBlock runs block with bash, set -euo pipefail, in dir, with bin
// first on a PATH that holds besides only bash and kubectl, in a HOME of its
// own, and KUBECONFIG naming no file, so that a command without
// --kubeconfig fails. It fails t unless the block exits 0 and prints no key
// or kubeconfig credentials, and returns what it printed.
func runREADMEBlock(t *testing.T, ctx context.Context, dir, bin, name, block string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, "bash", "-c", "set -euo pipefail\n"+block)
	cmd.Dir = dir
	cmd.Env = testenv.New(t, testenv.Options{Kubeconfig: filepath.Join(dir, "absent.kubeconfig"), Dirs: []string{bin},
		Programs: []string{"bash", "kubectl"}})
	start := time.Now()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the README's CLI block %s:\n%s\nprinted:\n%s", name, block, out)
	for _, secret := range neverPrinted {
		assert.NotContains(t, string(out), secret, "the README's CLI block %s printed it", name)
	}
	t.Logf("the README's CLI block %s ran in %s:\n%s", name, time.Since(start).Round(time.Millisecond), out)
	return string(out)
}
