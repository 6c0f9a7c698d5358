package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/internal/liqosteps"
	"github.com/kubepact/kubepact/kubeconfig"
)

// peer is one cluster of a two-way peering: the package's cluster and the
// ID its kubepact-controller runs with, as provider of the other cluster
// and as its consumer.
type peer struct {
	*side
	id string
}

// twoWayWait bounds each wait of a two-way peering: a handshake step, a
// slice's kubeconfig.
const twoWayWait = time.Minute

// waitFor polls cond every 100ms until it holds, and fails t with what
// when it does not within twoWayWait.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, twoWayWait, 100*time.Millisecond, "%s, within %s", what, twoWayWait)
}

// deploymentArgs returns the controller container's args of the
// kubepact-controller Deployment that the kustomization in dir renders.
func deploymentArgs(ctx context.Context, t testing.TB, dir string) []string {
	t.Helper()
	objects, err := kustomize(ctx, dir)
	require.NoError(t, err)
	for _, u := range objects {
		if u.GetKind() != "Deployment" || u.GetName() != "kubepact-controller" {
			continue
		}
		containers, _, err := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		require.NoError(t, err)
		for _, c := range containers {
			c := c.(map[string]any)
			if c["name"] != "controller" {
				continue
			}
			var args []string
			for _, a := range c["args"].([]any) {
				args = append(args, a.(string))
			}
			return args
		}
	}
	t.Fatalf("%s has no kubepact-controller Deployment with a controller container", dir)
	return nil
}

// clusterArgs are what the package's clusters need beyond a Deployment's
// args: p's ID (they carry controllers of several IDs, one test at a time)
// and the API server consumers reach, which a pod would learn from
// kube-public/cluster-info.
func clusterArgs(t testing.TB, p peer) []string {
	t.Helper()
	return []string{"--cluster-id=" + p.id,
		"--api-server-url=" + p.cluster.Host(), "--api-server-ca-file=" + writeFile(t, p.cluster.CA())}
}

// startCurrent runs this build's kubepact-controller on p, in the test's
// process, as the ServiceAccount config/ makes, with the args of the
// Deployment config/ ships: listen ports off, the lease in the
// Deployment's namespace (a pod's own), clusterArgs, and extra.
func startCurrent(ctx context.Context, t testing.TB, p peer, extra ...string) *replica {
	t.Helper()
	var args []string
	for _, a := range deploymentArgs(ctx, t, filepath.Join("..", "..", "config")) {
		switch {
		case strings.HasPrefix(a, "--metrics-bind-address="):
			a = "--metrics-bind-address=0"
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			a = "--health-probe-bind-address=0"
		}
		args = append(args, a)
	}
	args = append(args, "--leader-election-namespace=kubepact-system")
	return start(t, p.side, append(append(args, clusterArgs(t, p)...), extra...)...)
}

// peerBothWays makes a consumer of b and b a consumer of a, each through
// the declarative handshake answered by the controllers running on them.
func peerBothWays(ctx context.Context, t *testing.T, a, b peer) {
	t.Helper()
	handshakeBetween(ctx, t, a, b)
	handshakeBetween(ctx, t, b, a)
}

// handshakeBetween makes c a consumer of p through the declarative
// handshake answered by the controllers running on both
// (liqosteps.Handshake).
func handshakeBetween(ctx context.Context, t *testing.T, p, c peer) {
	t.Helper()
	require.NoError(t, liqosteps.Handshake(ctx, p.stepsCluster(), c.stepsCluster()))
}

// stepsCluster is x for liqosteps.
func (x peer) stepsCluster() liqosteps.Cluster {
	return liqosteps.Cluster{ID: x.id, Admin: x.admin, Typed: x.typed}
}

// heldKubeconfig returns the kubeconfig that consumer c keeps for provider
// p in Secret name of its tenant namespace for p: a credential a peer
// really holds.
func heldKubeconfig(ctx context.Context, t *testing.T, p, c peer, name string) *kubeconfig.Config {
	t.Helper()
	s, err := c.admin.CoreV1().Secrets(clusterid.TenantNamespace(p.id)).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err, "%s's Secret %s", c.id, name)
	cfg, err := kubeconfig.Parse(s.Data[kubeconfig.SecretKey])
	require.NoError(t, err, "%s's Secret %s", c.id, name)
	return cfg
}

// controlPlaneKubeconfig is c's ControlPlane kubeconfig for p.
func controlPlaneKubeconfig(ctx context.Context, t *testing.T, p, c peer) *kubeconfig.Config {
	t.Helper()
	return heldKubeconfig(ctx, t, p, c, kubeconfig.SecretName(identity.ControlPlaneName(p.id)))
}

// sliceKubeconfig is the kubeconfig of c's ResourceSlice slice on p.
func sliceKubeconfig(ctx context.Context, t *testing.T, p, c peer, slice string) *kubeconfig.Config {
	t.Helper()
	return heldKubeconfig(ctx, t, p, c, kubeconfig.SecretName(identity.ResourceSliceName(slice)))
}

// restConfigOf returns cfg's client configuration with a rate limit that
// lets a test ask many questions quickly.
func restConfigOf(t *testing.T, cfg *kubeconfig.Config) *rest.Config {
	t.Helper()
	rc, err := cfg.RESTConfig()
	require.NoError(t, err)
	rc.QPS, rc.Burst = 500, 1000
	return rc
}

// requireControlPlaneWorks checks that c's ControlPlane kubeconfig for p
// authenticates on p as c and lists the ResourceSlices of c's tenant
// namespace there, as the replicator does.
func requireControlPlaneWorks(ctx context.Context, t *testing.T, p, c peer) {
	t.Helper()
	cfg := controlPlaneKubeconfig(ctx, t, p, c)
	require.Equal(t, c.id, cfg.User())
	dyn, err := dynamic.NewForConfig(restConfigOf(t, cfg))
	require.NoError(t, err)
	_, err = dyn.Resource(authv1beta1.SchemeGroupVersion.WithResource(authv1beta1.ResourceSliceResource)).
		Namespace(clusterid.TenantNamespace(c.id)).List(ctx, metav1.ListOptions{})
	require.NoError(t, err, "%s's ControlPlane kubeconfig works on %s", c.id, p.id)
}

// makeSlice creates ResourceSlice name on consumer c for provider p and
// waits for its kubeconfig Secret on c (liqosteps.Slice).
func makeSlice(ctx context.Context, t *testing.T, p, c peer, name string) {
	t.Helper()
	require.NoError(t, liqosteps.Slice(ctx, p.stepsCluster(), c.stepsCluster(), name))
}
