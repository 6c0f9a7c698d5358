package helm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

const (
	// releaseName and releaseNamespace are where the README installs the
	// chart: helm install kubepact charts/kubepact -n kubepact-system
	// --create-namespace.
	releaseName      = "kubepact"
	releaseNamespace = "kubepact-system"
	// controllerName names the controller's Deployment, ServiceAccount,
	// ClusterRole and admission policy, in the chart as in config/.
	controllerName = "kubepact-controller"
	// helmTimeout bounds one Helm action.
	helmTimeout = 2 * time.Minute
)

// chartDir is charts/kubepact.
var chartDir = filepath.Join(root, "charts", "kubepact")

// loadChart loads the chart in dir as helm install DIR does.
func loadChart(t *testing.T, dir string) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(dir)
	require.NoError(t, err, "loading the chart %s", dir)
	return ch
}

// renderRelease renders the chart with vals as helm template does: no
// cluster, so no lookup, the release kubepact in kubepact-system. It
// returns the release, whose Manifest holds the templates' objects (the
// CRDs of crds/ are not among them), or Helm's error.
func renderRelease(ch *chart.Chart, vals map[string]any) (*release.Release, error) {
	return renderIn(ch, releaseNamespace, vals)
}

// renderIn is renderRelease in namespace ns.
func renderIn(ch *chart.Chart, ns string, vals map[string]any) (*release.Release, error) {
	i := action.NewInstall(&action.Configuration{})
	i.DryRun, i.ClientOnly, i.Replace = true, true, true
	i.ReleaseName, i.Namespace = releaseName, ns
	return i.Run(ch, vals)
}

// render is renderRelease's objects; it fails t on an error.
func render(t *testing.T, ch *chart.Chart, vals map[string]any) []*unstructured.Unstructured {
	t.Helper()
	rel, err := renderRelease(ch, vals)
	require.NoError(t, err, "rendering the chart with %v", vals)
	return manifestObjects(t, rel.Manifest)
}

// manifestObjects decodes a release's manifest, in Helm's install order.
func manifestObjects(t *testing.T, manifest string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, m := range releaseutil.SplitManifests(manifest) {
		u := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte(m), &u.Object), "%s", m)
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, b *unstructured.Unstructured) int { return strings.Compare(objectKey(a), objectKey(b)) })
	return out
}

// objectKey names an object by kind, namespace and name.
func objectKey(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetKind() + " " + u.GetName()
	}
	return u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
}

// find returns the object of kind and name among objects, or nil.
func find(objects []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, u := range objects {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	return nil
}

// helmClient runs Helm's actions on one cluster, in one namespace, as the
// helm binary does with --kubeconfig and -n.
type helmClient struct {
	cfg       *action.Configuration
	namespace string
}

// newHelm returns the Helm client of e for namespace: the RESTClientGetter
// is cli-runtime's ConfigFlags over e's administrator kubeconfig, with
// Helm's own client rate limits and its discovery cache kept in e's
// directory; releases are stored in Secrets, Helm's default.
func newHelm(t *testing.T, e *env, namespace string) *helmClient {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	cache := filepath.Join(e.dir, "helm-cache")
	flags.KubeConfig, flags.Namespace, flags.CacheDir = &e.kubeconfig, &namespace, &cache
	flags.WrapConfigFn = func(c *rest.Config) *rest.Config {
		c.QPS, c.Burst = 100, 200
		return c
	}
	cfg := new(action.Configuration)
	require.NoError(t, cfg.Init(flags, namespace, "secret", func(string, ...any) {}))
	return &helmClient{cfg: cfg, namespace: namespace}
}

// install runs helm install name with vals, creating the namespace as
// --create-namespace does, and without --wait: the test control planes run
// no pods.
func (h *helmClient) install(ctx context.Context, name string, ch *chart.Chart, vals map[string]any) (*release.Release, error) {
	i := action.NewInstall(h.cfg)
	i.ReleaseName, i.Namespace, i.CreateNamespace, i.Timeout = name, h.namespace, true, helmTimeout
	return i.RunWithContext(ctx, ch, vals)
}

// upgrade runs helm upgrade name with vals, as given on the command line
// (no --reuse-values).
func (h *helmClient) upgrade(ctx context.Context, name string, ch *chart.Chart, vals map[string]any) (*release.Release, error) {
	u := action.NewUpgrade(h.cfg)
	u.Namespace, u.Timeout = h.namespace, helmTimeout
	return u.RunWithContext(ctx, name, ch, vals)
}

// uninstall runs helm uninstall name.
func (h *helmClient) uninstall(name string) (*release.UninstallReleaseResponse, error) {
	u := action.NewUninstall(h.cfg)
	u.Timeout = helmTimeout
	return u.Run(name)
}

// releases lists the namespace's releases in every state, as helm list -a.
func (h *helmClient) releases(t *testing.T) []*release.Release {
	t.Helper()
	l := action.NewList(h.cfg)
	l.All, l.StateMask = true, action.ListAll
	rels, err := l.Run()
	require.NoError(t, err)
	return rels
}

// writeChart writes files, by path relative to the chart's directory, into
// a new directory and returns it.
func writeChart(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, data, 0o644), "%s", name)
	}
	return dir
}

// values builds Helm values from dotted keys, as --set does, without its
// parsing: values("replicas", 3, "metrics.port", 9443).
func values(kv ...any) map[string]any {
	out := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		path := strings.Split(kv[i].(string), ".")
		m := out
		for _, k := range path[:len(path)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		m[path[len(path)-1]] = kv[i+1]
	}
	if len(kv)%2 != 0 {
		panic(fmt.Sprintf("values: odd argument count %d", len(kv)))
	}
	return out
}
