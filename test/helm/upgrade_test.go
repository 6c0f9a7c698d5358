package helm

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/internal/kustomize"
	"github.com/kubepact/kubepact/internal/liqosteps"
	"github.com/kubepact/kubepact/internal/prevbuild"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/rbac"
)

// previousCommit is the version a migration to the chart starts from:
// kubepact v0.1.0, which shipped only config/ (kubectl apply -k).
const previousCommit = "50abfc7"

// notRendered are the objects v0.1.0's config/ makes that the chart, with
// the values of a migration, does not render, and what becomes of each
// (the README's migration text says the same): the release's namespace,
// which Helm installs into and never owns; and the CRDs, which the chart
// ships in crds/, where Helm creates only those missing and never owns,
// upgrades or deletes any. Nothing else of config/ may be left outside the
// release.
var notRendered = map[string]string{
	"Namespace " + releaseNamespace:                                  "the release's namespace",
	"CustomResourceDefinition identities.authentication.liqo.io":     "crds/",
	"CustomResourceDefinition renews.authentication.liqo.io":         "crds/",
	"CustomResourceDefinition resourceslices.authentication.liqo.io": "crds/",
	"CustomResourceDefinition tenants.authentication.liqo.io":        "crds/",
}

// migrationValues are the values that reproduce a v0.1.0 kustomize install
// of the whole config/ (CRDs, peer roles, controller) left as shipped: the
// peer roles, which config/roles made, become this release's. A cluster whose
// Deployment args were patched sets the matching values (apiServerURL,
// clusterID, ...), and one where Liqo's release owns the peer roles sets
// peerRoles.create=false.
func migrationValues() map[string]any { return values("peerRoles.create", true) }

// member is one cluster of a two-way peering: one of the package's
// clusters and the ID its controller records.
type member struct {
	*env
	id string
}

// TestMigrateKustomizeToHelm upgrades a two-way peering, with a
// ResourceSlice each way, from v0.1.0 installed with kubectl apply -k
// config/ (no chart existed) to this version's chart, as the README's
// migration says, on both clusters:
//
//   - v0.1.0's config/ applied with kubectl and its kubepact-controller
//     (built from the repository's history) run with its Deployment's args
//     as its ServiceAccount; each cluster becomes a consumer of the other
//     and asks for a slice, which v0.1.0 binds in the tenant namespace;
//   - its controllers stopped; a plain helm install is refused (the objects
//     are not the release's) and changes nothing; helm install
//     --take-ownership with migrationValues adopts config/'s objects; this
//     build runs with the args of the release's Deployment;
//   - then helm upgrade with a changed value, and the controllers rolled.
//
// After each step: every kubeconfig the consumers hold (ControlPlane and
// slice) authenticates on its provider with the certificate it held, no
// CertificateSigningRequest was made, and the ID records are unchanged;
// every object of v0.1.0's config/ is the release's, with the chart's
// rules, args and admission expressions and none of v0.1.0's fields the
// chart lacks, or is listed in notRendered; the slice RoleBindings v0.1.0
// made in tenant namespaces are deleted. The clusters are wiped at the end,
// as the package's other tests leave them.
func TestMigrateKustomizeToHelm(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	bin, tree, err := prevbuild.Build(ctx, previousCommit, nil)
	require.NoError(t, err, "the migration test needs the repository with commit %s: a full clone, not a shallow one", previousCommit)
	pe, ce := clusters(t)
	t.Cleanup(func() {
		for _, e := range []*env{pe, ce} {
			clearFinalizers(t, e)
			wipe(t, e)
		}
	})
	envs := []*env{pe, ce}

	// v0.1.0, as an operator ran it.
	oldConfig := filepath.Join(tree, "config")
	oldObjects, err := kustomize.Render(ctx, oldConfig)
	require.NoError(t, err)
	oldArgs := deploymentOf(t, kustomizeObjects(t, oldConfig)).Spec.Template.Spec.Containers[0].Args
	var old []*controller
	for _, e := range envs {
		publishClusterInfo(ctx, t, e)
		kubectl(ctx, t, e, "apply", "-k", oldConfig)
		eventually(t, "the CRDs served on "+e.cluster.Name(), func() bool {
			_, err := e.dynamic.Resource(tenantResource).Namespace("").List(ctx, metav1.ListOptions{Limit: 1})
			return err == nil
		})
		ctrl := startBinary(t, e, bin, releaseNamespace, oldArgs)
		ctrl.waitReady(t)
		old = append(old, ctrl)
	}
	var members []member
	for _, e := range envs {
		eventually(t, "the cluster ID recorded on "+e.cluster.Name(), func() bool {
			cms, err := e.admin.CoreV1().ConfigMaps(liqoNamespace).List(ctx, metav1.ListOptions{
				LabelSelector: clusterid.RecordLabel + "=" + clusterid.RecordLabelValue})
			return err == nil && len(cms.Items) == 1
		})
		members = append(members, member{e, recordedID(ctx, t, e)})
	}
	a, b := members[0], members[1]
	pairs := [][2]member{{a, b}, {b, a}} // provider, consumer
	for _, x := range pairs {
		handshakeBetween(ctx, t, x[0], x[1])
	}
	sliceOf := map[string]string{a.id: "slice-migrate-a", b.id: "slice-migrate-b"} // consumer ID: its slice
	for _, x := range pairs {
		makeSlice(ctx, t, x[0], x[1], sliceOf[x[1].id])
	}
	for _, x := range pairs {
		_, err := x[0].admin.RbacV1().RoleBindings(clusterid.TenantNamespace(x[1].id)).Get(ctx, tenantSliceBinding, metav1.GetOptions{})
		require.NoError(t, err, "v0.1.0 binds %s's slices in its tenant namespace on %s: what the upgrade must delete", x[1].id, x[0].id)
	}
	before := heldCredentials(ctx, t, pairs, sliceOf)
	csrsBefore := map[string]sets.Set[string]{a.id: csrNames(ctx, t, a.env), b.id: csrNames(ctx, t, b.env)}

	// The migration.
	for i, e := range envs {
		require.NoError(t, old[i].stop(t), "v0.1.0 on %s exits 0 on SIGTERM", e.cluster.Name())
	}
	ch := loadChart(t, chartDir)
	rels := map[string]*release.Release{}
	for _, m := range members {
		h := newHelm(t, m.env, releaseNamespace)
		_, err := h.install(ctx, releaseName, ch, migrationValues())
		require.Error(t, err, "helm install without --take-ownership over config/'s objects on %s", m.id)
		assert.Empty(t, h.releases(t), "no release recorded after the refused install on %s", m.id)
		assert.Equal(t, oldArgs, liveDeployment(ctx, t, m.env).Spec.Template.Spec.Containers[0].Args,
			"the refused install left v0.1.0's Deployment as it was on %s", m.id)

		rels[m.id], err = h.adopt(ctx, releaseName, ch, migrationValues())
		require.NoError(t, err, "helm install --take-ownership on %s", m.id)
		require.Equal(t, release.StatusDeployed, rels[m.id].Info.Status)
	}
	var current []*controller
	for _, m := range members {
		ctrl := startController(t, m.env, releaseNamespace, deploymentArgs(t, rels[m.id].Manifest))
		ctrl.waitReady(t)
		current = append(current, ctrl)
	}
	requireSliceBindingsDeleted(ctx, t, pairs)
	// The controllers have resynced what they found; give them a moment
	// to do whatever else they would.
	time.Sleep(3 * time.Second)
	check := func(step string) {
		t.Helper()
		for _, m := range members {
			assert.Equal(t, m.id, recordedID(ctx, t, m.env), "%s: %s's cluster ID record", step, m.cluster.Name())
			assert.Equal(t, csrsBefore[m.id], csrNames(ctx, t, m.env), "%s: no CertificateSigningRequest made on %s", step, m.id)
			requireAdopted(ctx, t, m.env, ch, rels[m.id], oldObjects)
		}
		requireSliceBindingsDeleted(ctx, t, pairs)
		requireHeldWork(ctx, t, pairs, sliceOf, before, step)
	}
	check("after helm install --take-ownership")

	// helm upgrade with a changed value, and the rollout it makes.
	upgraded := values("peerRoles.create", true, "certificateLifetime", "240h", "replicas", 3)
	for i, m := range members {
		rel, err := newHelm(t, m.env, releaseNamespace).upgrade(ctx, releaseName, ch, upgraded)
		require.NoError(t, err, "helm upgrade on %s", m.id)
		require.Equal(t, release.StatusDeployed, rel.Info.Status)
		require.Equal(t, 2, rel.Version)
		rels[m.id] = rel
		d := liveDeployment(ctx, t, m.env)
		require.Equal(t, int32(3), *d.Spec.Replicas)
		require.Contains(t, d.Spec.Template.Spec.Containers[0].Args, "--certificate-lifetime=240h")
		require.NoError(t, current[i].stop(t), "the controller on %s exits 0 on SIGTERM", m.id)
		current[i] = startController(t, m.env, releaseNamespace, deploymentArgs(t, rel.Manifest))
	}
	for _, c := range current {
		c.waitReady(t)
	}
	time.Sleep(3 * time.Second)
	check("after helm upgrade")
}

// adopt runs helm install name with vals and --take-ownership (Helm 3.17
// and later): the objects the chart renders that exist already, made by
// kubectl apply -k config/, become the release's instead of failing the
// install.
func (h *helmClient) adopt(ctx context.Context, name string, ch *chart.Chart, vals map[string]any) (*release.Release, error) {
	i := action.NewInstall(h.cfg)
	i.ReleaseName, i.Namespace, i.CreateNamespace, i.Timeout = name, h.namespace, true, helmTimeout
	i.TakeOwnership = true
	return i.RunWithContext(ctx, ch, vals)
}

// tenantSliceBinding is the RoleBinding v0.1.0 made in a tenant namespace
// for the consumer's slice identities.
var tenantSliceBinding = rbac.BindingName(rbac.VirtualKubeletClusterRoleName)

// requireSliceBindingsDeleted waits until no tenant namespace of pairs'
// providers holds tenantSliceBinding, and fails t naming those left.
func requireSliceBindingsDeleted(ctx context.Context, t *testing.T, pairs [][2]member) {
	t.Helper()
	left := func() []string {
		var left []string
		for _, x := range pairs {
			p, c := x[0], x[1]
			ns := clusterid.TenantNamespace(c.id)
			switch _, err := p.admin.RbacV1().RoleBindings(ns).Get(ctx, tenantSliceBinding, metav1.GetOptions{}); {
			case err == nil:
				left = append(left, fmt.Sprintf("%s/%s on %s", ns, tenantSliceBinding, p.id))
			case !apierrors.IsNotFound(err):
				left = append(left, fmt.Sprintf("%s/%s on %s: %v", ns, tenantSliceBinding, p.id, err))
			}
		}
		return left
	}
	if !assert.Eventually(t, func() bool { return len(left()) == 0 }, wait, 200*time.Millisecond,
		"this build deletes the slice RoleBindings v0.1.0 made in tenant namespaces") {
		t.Errorf("still bound: %s", strings.Join(left(), "; "))
	}
}

// held names a kubeconfig Secret a consumer holds for a provider.
type held struct{ provider, consumer, secret string }

func (h held) String() string {
	return fmt.Sprintf("%s's Secret %s for %s", h.consumer, h.secret, h.provider)
}

// heldCredentials reads the kubeconfig Secrets each consumer of pairs holds
// for its provider: its ControlPlane identity's and its slice's.
func heldCredentials(ctx context.Context, t *testing.T, pairs [][2]member, sliceOf map[string]string) map[held]map[string][]byte {
	t.Helper()
	out := map[held]map[string][]byte{}
	for _, x := range pairs {
		p, c := x[0], x[1]
		for _, name := range []string{identity.ControlPlaneName(p.id), identity.ResourceSliceName(sliceOf[c.id])} {
			h := held{p.id, c.id, kubeconfig.SecretName(name)}
			s, err := c.admin.CoreV1().Secrets(clusterid.TenantNamespace(p.id)).Get(ctx, h.secret, metav1.GetOptions{})
			require.NoError(t, err, "%s", h)
			out[h] = s.Data
		}
	}
	return out
}

// requireHeldWork checks that each kubeconfig Secret of before is as it
// was, and that its kubeconfig authenticates on its provider: the
// ControlPlane identity as the consumer's user, the slice identity in the
// consumer's group.
func requireHeldWork(ctx context.Context, t *testing.T, pairs [][2]member, sliceOf map[string]string, before map[held]map[string][]byte, step string) {
	t.Helper()
	now := heldCredentials(ctx, t, pairs, sliceOf)
	require.Len(t, now, len(before))
	for h, data := range before {
		assert.Equal(t, data, now[h], "%s: %s kept its certificate", step, h)
		cfg, err := kubeconfig.Parse(now[h][kubeconfig.SecretKey])
		require.NoError(t, err, "%s", h)
		rc, err := cfg.RESTConfig()
		require.NoError(t, err)
		cs, err := kubernetes.NewForConfig(rc)
		require.NoError(t, err)
		who, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if !assert.NoError(t, err, "%s: %s authenticates", step, h) {
			continue
		}
		if h.secret == kubeconfig.SecretName(identity.ControlPlaneName(h.provider)) {
			assert.Equal(t, h.consumer, who.Status.UserInfo.Username, "%s: %s authenticates as the consumer", step, h)
		} else {
			assert.Contains(t, who.Status.UserInfo.Groups, h.consumer, "%s: %s authenticates in the consumer's group", step, h)
		}
	}
}

// csrNames lists the CertificateSigningRequests of tenant identities on e.
func csrNames(ctx context.Context, t *testing.T, e *env) sets.Set[string] {
	t.Helper()
	list, err := e.admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{LabelSelector: kube.CSRLabel})
	require.NoError(t, err)
	out := sets.New[string]()
	for _, c := range list.Items {
		out.Insert(c.Name)
	}
	return out
}

// liveDeployment reads the controller's Deployment on e.
func liveDeployment(ctx context.Context, t *testing.T, e *env) *appsv1.Deployment {
	t.Helper()
	d, err := e.admin.AppsV1().Deployments(releaseNamespace).Get(ctx, controllerName, metav1.GetOptions{})
	require.NoError(t, err)
	return d
}

// requireAdopted checks, on e, what became of each object of v0.1.0's
// config/ (oldObjects) once rel is installed: it is the release's (Helm's
// ownership annotations and label) and has what the chart renders where
// it matters (comparedFields) and none of the fields v0.1.0 set that the
// chart does not render; or it is one of notRendered: the release's
// namespace, or a CRD as the chart's crds/ holds it.
func requireAdopted(ctx context.Context, t *testing.T, e *env, ch *chart.Chart, rel *release.Release, oldObjects []*unstructured.Unstructured) {
	t.Helper()
	rendered := map[string]*unstructured.Unstructured{}
	for _, u := range manifestObjects(t, rel.Manifest) {
		rendered[objectKey(u)] = u
	}
	crds := map[string]*unstructured.Unstructured{}
	for _, f := range ch.CRDObjects() {
		u := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal(f.File.Data, &u.Object), "%s", f.Filename)
		crds[objectKey(u)] = u
	}
	var outside []string
	for _, o := range oldObjects {
		o = o.DeepCopy()
		if clusterScoped[o.GetKind()] {
			o.SetNamespace("")
		}
		key := objectKey(o)
		live := liveObject(ctx, t, e, o)
		if live == nil {
			t.Errorf("%s of v0.1.0's config/ is gone from %s", key, e.cluster.Name())
			continue
		}
		r, ok := rendered[key]
		if !ok {
			outside = append(outside, key)
			switch {
			case o.GetKind() == "Namespace":
				assert.Equal(t, rel.Namespace, o.GetName(), "%s: the release's namespace", key)
				assert.Nil(t, live.GetDeletionTimestamp(), "%s is not Terminating", key)
			case o.GetKind() == "CustomResourceDefinition":
				want, ok := crds[key]
				if assert.True(t, ok, "%s is one of the chart's crds/", key) {
					for _, f := range []string{"group", "names", "scope", "versions"} {
						assert.Equal(t, jsonValue(t, want.Object["spec"].(map[string]any)[f]), jsonValue(t, live.Object["spec"].(map[string]any)[f]),
							"%s: spec.%s as the chart's crds/ holds it", key, f)
					}
				}
			}
			continue
		}
		assert.Equal(t, rel.Name, live.GetAnnotations()["meta.helm.sh/release-name"], "%s: the release's", key)
		assert.Equal(t, rel.Namespace, live.GetAnnotations()["meta.helm.sh/release-namespace"], "%s: the release's", key)
		assert.Equal(t, "Helm", live.GetLabels()["app.kubernetes.io/managed-by"], "%s: managed by Helm", key)
		for k, v := range r.GetLabels() {
			assert.Equal(t, v, live.GetLabels()[k], "%s: the chart's label %s", key, k)
		}
		for _, f := range comparedFields[o.GetKind()] {
			want, _, err := unstructured.NestedFieldNoCopy(r.Object, f...)
			require.NoError(t, err)
			got, _, err := unstructured.NestedFieldNoCopy(live.Object, f...)
			require.NoError(t, err)
			assert.Equal(t, jsonValue(t, want), jsonValue(t, got), "%s: %s as the chart renders it", key, strings.Join(f, "."))
		}
		if o.GetKind() == "Deployment" {
			requireContainerAsRendered(t, key, r, live)
		}
		for _, f := range leafPaths(o.Object, nil) {
			if _, found, _ := unstructured.NestedFieldNoCopy(r.Object, f...); found {
				continue
			}
			_, found, _ := unstructured.NestedFieldNoCopy(live.Object, f...)
			assert.False(t, found, "%s: v0.1.0's %s, which the chart does not render, is left behind", key, strings.Join(f, "."))
		}
	}
	slices.Sort(outside)
	documented := slices.Sorted(maps.Keys(notRendered))
	assert.Equal(t, documented, outside, "what v0.1.0's config/ made that is not the release's on %s: only what notRendered (and the README) lists", e.cluster.Name())
}

// comparedFields are, by kind, the fields of an adopted object that must
// be the chart's after the adoption: who is granted what, the admission
// policies' expressions, what the metrics Service selects. Helm patches an
// adopted object with the chart's rendering; a list the patch merged
// instead of replacing would keep v0.1.0's entries here.
var comparedFields = map[string][][]string{
	"ClusterRole":                      {{"rules"}},
	"Role":                             {{"rules"}},
	"ClusterRoleBinding":               {{"roleRef"}, {"subjects"}},
	"RoleBinding":                      {{"roleRef"}, {"subjects"}},
	"ValidatingAdmissionPolicy":        {{"spec", "matchConditions"}, {"spec", "variables"}, {"spec", "validations"}},
	"ValidatingAdmissionPolicyBinding": {{"spec", "policyName"}, {"spec", "validationActions"}},
	"Service":                          {{"spec", "selector"}},
	"Deployment":                       {{"spec", "selector"}, {"spec", "replicas"}, {"spec", "template", "spec", "serviceAccountName"}},
}

// requireContainerAsRendered checks that the live Deployment's container
// runs the chart's image with the chart's args, and that its environment,
// mounts and the pod's volumes are the chart's by name: a strategic merge
// keeps entries of a list merged by name that the chart no longer has.
func requireContainerAsRendered(t *testing.T, key string, rendered, live *unstructured.Unstructured) {
	t.Helper()
	var r, l appsv1.Deployment
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(rendered.Object, &r))
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, &l))
	require.Len(t, l.Spec.Template.Spec.Containers, len(r.Spec.Template.Spec.Containers), "%s: its containers", key)
	rc, lc := r.Spec.Template.Spec.Containers[0], l.Spec.Template.Spec.Containers[0]
	assert.Equal(t, rc.Image, lc.Image, "%s: the chart's image", key)
	assert.Equal(t, rc.Args, lc.Args, "%s: the chart's args", key)
	names := func(n int, name func(int) string) []string {
		out := make([]string, n)
		for i := range n {
			out[i] = name(i)
		}
		slices.Sort(out)
		return out
	}
	assert.Equal(t, names(len(rc.Env), func(i int) string { return rc.Env[i].Name }),
		names(len(lc.Env), func(i int) string { return lc.Env[i].Name }), "%s: the chart's environment", key)
	assert.Equal(t, names(len(rc.VolumeMounts), func(i int) string { return rc.VolumeMounts[i].Name }),
		names(len(lc.VolumeMounts), func(i int) string { return lc.VolumeMounts[i].Name }), "%s: the chart's mounts", key)
	rv, lv := r.Spec.Template.Spec.Volumes, l.Spec.Template.Spec.Volumes
	assert.Equal(t, names(len(rv), func(i int) string { return rv[i].Name }),
		names(len(lv), func(i int) string { return lv[i].Name }), "%s: the chart's volumes", key)
}

// leafPaths lists the paths of obj's values that are not maps, the
// object's name and namespace aside.
func leafPaths(obj map[string]any, prefix []string) [][]string {
	var out [][]string
	for k, v := range obj {
		p := append(prefix[:len(prefix):len(prefix)], k)
		if len(p) == 2 && p[0] == "metadata" && (k == "name" || k == "namespace") {
			continue
		}
		if m, ok := v.(map[string]any); ok && len(m) > 0 {
			out = append(out, leafPaths(m, p)...)
			continue
		}
		out = append(out, p)
	}
	return out
}

// liveObject reads the object named as u on e, or nil if there is none.
func liveObject(ctx context.Context, t *testing.T, e *env, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	gvk := u.GroupVersionKind()
	m, err := e.typed.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	require.NoError(t, err, "%s", objectKey(u))
	live, err := e.dynamic.Resource(m.Resource).Namespace(u.GetNamespace()).Get(ctx, u.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err, "%s", objectKey(u))
	return live
}

// jsonValue returns v as encoding/json decodes it, so that values decoded
// from YAML and from the API server compare equal.
func jsonValue(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var out any
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

// handshakeBetween makes c a consumer of p through the declarative
// handshake answered by the controllers running on both
// (liqosteps.Handshake).
func handshakeBetween(ctx context.Context, t *testing.T, p, c member) {
	t.Helper()
	require.NoError(t, liqosteps.Handshake(ctx, p.stepsCluster(), c.stepsCluster()))
}

// stepsCluster is x for liqosteps.
func (x member) stepsCluster() liqosteps.Cluster {
	return liqosteps.Cluster{ID: x.id, Admin: x.admin, Typed: x.typed}
}

// makeSlice creates ResourceSlice name on consumer c for provider p and
// waits for its kubeconfig Secret on c (liqosteps.Slice).
func makeSlice(ctx context.Context, t *testing.T, p, c member, name string) {
	t.Helper()
	require.NoError(t, liqosteps.Slice(ctx, p.stepsCluster(), c.stepsCluster(), name))
}

// clearFinalizers removes the finalizers of e's authentication.liqo.io
// objects (Tenants, Identities, ResourceSlices, Renews) once the
// controllers that would remove them are stopped, so that wipe's deletion
// of the CRDs and the tenant namespaces finishes.
func clearFinalizers(t *testing.T, e *env) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, r := range []string{authv1beta1.TenantResource, authv1beta1.IdentityResource, authv1beta1.ResourceSliceResource, authv1beta1.RenewResource} {
		api := e.dynamic.Resource(authv1beta1.SchemeGroupVersion.WithResource(r))
		list, err := api.Namespace("").List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		require.NoError(t, err, "listing %s on %s", r, e.cluster.Name())
		for _, u := range list.Items {
			if len(u.GetFinalizers()) == 0 {
				continue
			}
			_, err := api.Namespace(u.GetNamespace()).Patch(ctx, u.GetName(), types.MergePatchType,
				[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			if !apierrors.IsNotFound(err) {
				require.NoError(t, err, "clearing the finalizers of %s %s/%s", r, u.GetNamespace(), u.GetName())
			}
		}
	}
}
