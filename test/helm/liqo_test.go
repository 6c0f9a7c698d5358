package helm

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/internal/testenv"
)

const (
	// liqoNamespace is where Liqo's release lives, and the key namespace.
	liqoNamespace = "liqo"
	// liqoRelease is the release name liqoctl install gives Liqo's chart.
	liqoRelease = "liqo"
	// liqoVersion is the Liqo release whose chart the test rebuilds.
	liqoVersion = "v1.2.0"
)

// peerRoles are the ClusterRoles Liqo's chart makes for its consumers, and
// kubepact's chart with peerRoles.create.
var peerRoles = []string{"liqo-remote-controlplane", "liqo-virtual-kubelet-remote", "liqo-virtual-kubelet-remote-clusterwide"}

// liqoChart builds, from Liqo v1.2.0's own chart in Liqo's Go module, the
// part of it kubepact's chart meets: its CRDs, from the liqo-crds
// subchart's crds/ as Liqo's chart installs them; its three peer
// ClusterRoles (the templates liqo-controlplane-rbac.yaml and
// liqo-virtual-kubelet-remote.yaml with their rules in files/); and the
// cluster-ID ConfigMap (liqo-clusterid-configmap.yaml, which keeps a
// recorded ID through lookup); with Liqo's _helpers.tpl and values.yaml, so
// that names and labels are Liqo's. Its appVersion is the tag liqoctl
// installs it with.
func liqoChart(t *testing.T) *chart.Chart {
	t.Helper()
	download := exec.Command("go", "mod", "download", "-json", "github.com/liqotech/liqo@"+liqoVersion)
	download.Env = testenv.New(t, testenv.Options{Go: true})
	out, err := download.Output()
	require.NoError(t, err, "go mod download github.com/liqotech/liqo@%s", liqoVersion)
	var mod struct{ Dir string }
	require.NoError(t, json.Unmarshal(out, &mod))
	src := filepath.Join(mod.Dir, "deployments", "liqo")
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(src, filepath.FromSlash(name)))
		require.NoError(t, err, "Liqo's chart: %s", name)
		return b
	}
	files := map[string][]byte{
		"Chart.yaml": []byte("apiVersion: v2\nname: liqo\nversion: 0.1.0\nappVersion: " + liqoVersion + "\ntype: application\n" +
			"dependencies:\n  - name: liqo-crds\n    version: 0.1.0\n    repository: file://./charts/liqo-crds\n"),
		"values.yaml":                                read("values.yaml"),
		"templates/_helpers.tpl":                     read("templates/_helpers.tpl"),
		"templates/liqo-clusterid-configmap.yaml":    read("templates/liqo-clusterid-configmap.yaml"),
		"templates/liqo-controlplane-rbac.yaml":      read("templates/liqo-controlplane-rbac.yaml"),
		"templates/liqo-virtual-kubelet-remote.yaml": read("templates/liqo-virtual-kubelet-remote.yaml"),
		"charts/liqo-crds/Chart.yaml":                read("charts/liqo-crds/Chart.yaml"),
	}
	for _, r := range peerRoles {
		files["files/"+r+"-ClusterRole.yaml"] = read("files/" + r + "-ClusterRole.yaml")
	}
	crds, err := filepath.Glob(filepath.Join(src, "charts", "liqo-crds", "crds", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, crds, "Liqo's CRDs")
	for _, f := range crds {
		files["charts/liqo-crds/crds/"+filepath.Base(f)] = read("charts/liqo-crds/crds/" + filepath.Base(f))
	}
	return loadChart(t, writeChart(t, files))
}

// liqoObjects are the objects Liqo's release owns that kubepact meets, as
// read from the cluster: the peer roles and the cluster-ID ConfigMap.
func liqoObjects(ctx context.Context, t *testing.T, e *env) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, r := range peerRoles {
		u, err := e.dynamic.Resource(clusterRoleResource).Get(ctx, r, metav1.GetOptions{})
		require.NoError(t, err, "ClusterRole %s", r)
		out["ClusterRole "+r] = u
	}
	u, err := e.dynamic.Resource(configMapResource).Namespace(liqoNamespace).Get(ctx, clusterid.RecordName, metav1.GetOptions{})
	require.NoError(t, err, "ConfigMap %s/%s", liqoNamespace, clusterid.RecordName)
	out["ConfigMap "+clusterid.RecordName] = u
	return out
}

// requireLiqoOwns checks that each of objects is Liqo's release's, labelled
// as Liqo's chart labels it.
func requireLiqoOwns(t *testing.T, objects map[string]*unstructured.Unstructured) {
	t.Helper()
	for key, u := range objects {
		a, l := u.GetAnnotations(), u.GetLabels()
		assert.Equal(t, liqoRelease, a["meta.helm.sh/release-name"], "%s: its release", key)
		assert.Equal(t, liqoNamespace, a["meta.helm.sh/release-namespace"], "%s: its release's namespace", key)
		assert.Equal(t, "Helm", l["app.kubernetes.io/managed-by"], key)
		assert.Equal(t, "liqo-"+liqoVersion, l["helm.sh/chart"], "%s: Liqo's chart label", key)
		assert.Equal(t, "liqo", l["app.kubernetes.io/part-of"], "%s: Liqo's part-of label", key)
		assert.Equal(t, liqoRelease+"-"+l["app.kubernetes.io/name"], l["app.kubernetes.io/instance"], "%s: Liqo's instance label", key)
	}
}

// TestBesideLiqo installs the chart next to a Liqo-shaped release (liqo,
// in namespace liqo, from Liqo v1.2.0's chart: its CRDs, peer roles and
// cluster-ID ConfigMap), in both orders the README documents. In both,
// both releases install, Liqo's objects stay Liqo's (its release's
// ownership, its chart's labels), the cluster keeps the ID it recorded
// first, and kubepact-controller, run from the chart's rendering, becomes
// ready and completes a handshake.
func TestBesideLiqo(t *testing.T) {
	p, _ := clusters(t)
	liqo := liqoChart(t)
	kubepact := loadChart(t, chartDir)

	// kubepact first, with peerRoles.create=false because Liqo's release
	// will make them; then helm install liqo, which adopts the ID record
	// the controller made for it and keeps its ID. The README's way to
	// remove a peering before uninstalling, deleting its Tenant while the
	// controller runs, then lets every deletion finish.
	t.Run("kubepact first", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		t.Cleanup(func() { wipe(t, p) })
		publishClusterInfo(ctx, t, p)
		h := newHelm(t, p, releaseNamespace)
		rel, err := h.install(ctx, releaseName, kubepact, values("peerRoles.create", false))
		require.NoError(t, err)
		ctrl := startController(t, p, releaseNamespace, deploymentArgs(t, rel.Manifest))
		var id string
		eventually(t, "the controller recording the cluster's ID", func() bool {
			cms, err := p.admin.CoreV1().ConfigMaps(liqoNamespace).List(ctx, metav1.ListOptions{
				LabelSelector: clusterid.RecordLabel + "=" + clusterid.RecordLabelValue})
			if err == nil && len(cms.Items) == 1 {
				id = cms.Items[0].Data[clusterid.RecordKey]
			}
			return id != ""
		})
		// Not ready without the peer roles: /readyz/provider fails
		// through more than one of the controller's 5-second reads of
		// them.
		for end := time.Now().Add(6 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
			require.NotEqual(t, http.StatusOK, ctrl.get("/readyz/provider"), "a provider is not ready without the peer roles")
		}

		lh := newHelm(t, p, liqoNamespace)
		lrel, err := lh.install(ctx, liqoRelease, liqo, nil)
		require.NoError(t, err, "helm install liqo next to kubepact")
		require.Equal(t, release.StatusDeployed, lrel.Info.Status)
		requireLiqoOwns(t, liqoObjects(ctx, t, p))
		assert.Equal(t, id, recordedID(ctx, t, p), "Liqo's release keeps the ID the controller recorded")

		ctrl.waitReady(t)
		pr := handshake(ctx, t, p)
		assert.Equal(t, id, pr.providerID)

		// Unpeer while the controller runs: it removes its finalizer.
		require.NoError(t, p.typed.Delete(ctx, tenantOf(ctx, t, p, pr)))
		eventually(t, "the Tenant unpeered and gone", func() bool {
			_, err := p.dynamic.Resource(tenantResource).Namespace(clusterid.TenantNamespace(pr.consumerID)).Get(ctx, pr.consumerID, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
		_, err = h.uninstall(releaseName)
		require.NoError(t, err)
		require.NoError(t, ctrl.stop(t))
		_, err = lh.uninstall(liqoRelease)
		require.NoError(t, err)
		_, err = p.admin.CoreV1().ConfigMaps(liqoNamespace).Get(ctx, clusterid.RecordName, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "the ID record went with Liqo's release, which owned it: %v", err)
		requireNoneTerminating(ctx, t, p)
		deleteAndWait(ctx, t, p, authCRDs(ctx, t, p), tenantNamespaces(ctx, t, p, releaseNamespace, liqoNamespace))
	})

	// Liqo first: kubepact's chart with the default peerRoles.create=true
	// is refused (Helm will not take Liqo's roles) and changes nothing;
	// with peerRoles.create=false it installs, its crds/ skipped for
	// Liqo's, and not one of Liqo's objects is written.
	t.Run("Liqo first", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		t.Cleanup(func() { wipe(t, p) })
		publishClusterInfo(ctx, t, p)
		lh := newHelm(t, p, liqoNamespace)
		lrel, err := lh.install(ctx, liqoRelease, liqo, nil)
		require.NoError(t, err)
		require.Equal(t, release.StatusDeployed, lrel.Info.Status)
		before := liqoObjects(ctx, t, p)
		requireLiqoOwns(t, before)
		crdsBefore := map[string]string{}
		for _, name := range crdsOf(ctx, t, p, ".liqo.io") {
			u, err := p.dynamic.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			crdsBefore[name] = u.GetResourceVersion()
		}
		id := recordedID(ctx, t, p)

		h := newHelm(t, p, releaseNamespace)
		_, err = h.install(ctx, releaseName, kubepact, nil)
		// Helm checks who owns each object before it writes anything:
		// the refusal leaves no release record, no namespace, and
		// Liqo's objects as they were. Its error is a plain one naming
		// the object and its owner; what it did not do is what counts.
		require.Error(t, err, "with peerRoles.create=true, Helm refuses to take Liqo's roles")
		assert.Empty(t, h.releases(t), "no release recorded")
		_, err = p.admin.CoreV1().Namespaces().Get(ctx, releaseNamespace, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "no namespace created: %v", err)
		requireUnchanged(t, before, liqoObjects(ctx, t, p))

		rel, err := h.install(ctx, releaseName, kubepact, values("peerRoles.create", false))
		require.NoError(t, err)
		ctrl := startController(t, p, releaseNamespace, deploymentArgs(t, rel.Manifest))
		ctrl.waitReady(t)
		pr := handshake(ctx, t, p)
		assert.Equal(t, id, pr.providerID, "kubepact-controller takes the ID Liqo's chart recorded")

		requireUnchanged(t, before, liqoObjects(ctx, t, p))
		for name, rv := range crdsBefore {
			u, err := p.dynamic.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, rv, u.GetResourceVersion(), "CRD %s is Liqo's, unwritten", name)
		}
		require.NoError(t, ctrl.stop(t))
	})
}

// requireUnchanged checks that no object of before was written since.
func requireUnchanged(t *testing.T, before, now map[string]*unstructured.Unstructured) {
	t.Helper()
	for key, u := range before {
		assert.Equal(t, u.GetResourceVersion(), now[key].GetResourceVersion(), "%s unwritten", key)
		assert.Equal(t, u.GetLabels(), now[key].GetLabels(), "%s: its labels", key)
		assert.Equal(t, u.GetAnnotations(), now[key].GetAnnotations(), "%s: its annotations", key)
	}
}
