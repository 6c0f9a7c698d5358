package helm

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/tenant"
)

// leaseName is the Lease kubepact-controller's replicas elect their leader
// with.
const leaseName = "kubepact-controller.kubepact.io"

// TestInstallUpgradeUninstall installs the chart with its default values
// on a bare cluster, as the README does (helm install kubepact
// charts/kubepact -n kubepact-system --create-namespace), where
// kube-public/cluster-info names the API server as kubeadm publishes it:
//
//   - first with a typo and with a mistyped value, which the schema refuses:
//     no release, none of the chart's objects;
//   - then as documented: the controller runs with exactly the args of the
//     Deployment the release holds, as its ServiceAccount, becomes ready
//     and completes a handshake with the consumer cluster;
//   - helm upgrade with more replicas and a longer certificate lifetime
//     rolls the controller (the new args, the Lease taken over): the
//     peering still authenticates with the certificate it held, and no
//     CertificateSigningRequest was made;
//   - helm uninstall finishes and leaves what the README says stays: the
//     CRDs, the consumer's Tenant (with its finalizer) and tenant namespace,
//     the cluster's ID record; no namespace is left Terminating, and the
//     release's namespace, deleted as an operator would, goes at once;
//   - the README's steps to remove the peers' records after that (clear
//     the Tenants' finalizers, delete the CRDs, the tenant namespaces and
//     the key namespace) finish too.
func TestInstallUpgradeUninstall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p, c := clusters(t)
	t.Cleanup(func() { wipe(t, p) })
	publishClusterInfo(ctx, t, p)
	h := newHelm(t, p, releaseNamespace)
	ch := loadChart(t, chartDir)

	for _, vals := range []map[string]any{values("replica", 3), values("replicas", "two")} {
		_, err := h.install(ctx, releaseName, ch, vals)
		require.Error(t, err, "helm install with %v", vals)
		coalesced, cerr := chartutil.CoalesceValues(ch, vals)
		require.NoError(t, cerr)
		var schemaErr chartutil.JSONSchemaValidationError
		require.ErrorAs(t, chartutil.ValidateAgainstSingleSchema(coalesced, ch.Schema), &schemaErr, "the schema refuses %v", vals)
		assert.Empty(t, h.releases(t), "no release recorded for %v", vals)
		_, err = p.admin.AppsV1().Deployments(releaseNamespace).Get(ctx, controllerName, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "no Deployment after a refused install: %v", err)
		_, err = p.admin.RbacV1().ClusterRoles().Get(ctx, controllerName, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "no ClusterRole after a refused install: %v", err)
	}

	rel, err := h.install(ctx, releaseName, ch, nil)
	require.NoError(t, err)
	require.Equal(t, release.StatusDeployed, rel.Info.Status)
	requireReleaseObjects(ctx, t, p, rel)
	ctrl := startController(t, p, releaseNamespace, deploymentArgs(t, rel.Manifest))
	ctrl.waitReady(t)
	pr := handshake(ctx, t, p)
	secretBefore := heldSecret(ctx, t, c, pr)
	csrsBefore := countCSRs(ctx, t, p)
	holderBefore := leaseHolder(ctx, t, p)

	// helm upgrade, and the rollout it makes.
	up, err := h.upgrade(ctx, releaseName, ch, values("replicas", 3, "certificateLifetime", "240h"))
	require.NoError(t, err)
	require.Equal(t, release.StatusDeployed, up.Info.Status)
	d, err := p.admin.AppsV1().Deployments(releaseNamespace).Get(ctx, controllerName, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, int32(3), *d.Spec.Replicas)
	require.Contains(t, d.Spec.Template.Spec.Containers[0].Args, "--certificate-lifetime=240h")
	require.NoError(t, ctrl.stop(t), "the old controller exits 0 on SIGTERM")
	ctrl = startController(t, p, releaseNamespace, deploymentArgs(t, up.Manifest))
	ctrl.waitReady(t)
	eventually(t, "the upgraded controller leading", func() bool {
		h := leaseHolder(ctx, t, p)
		return h != "" && h != holderBefore
	})
	// It has resynced the Tenant it found; give it a moment to have done
	// whatever it would.
	time.Sleep(3 * time.Second)
	requireAuthenticates(ctx, t, p, pr)
	assert.Equal(t, secretBefore, heldSecret(ctx, t, c, pr), "the consumer's kubeconfig Secret is unchanged")
	assert.Equal(t, csrsBefore, countCSRs(ctx, t, p), "no CertificateSigningRequest made by the upgrade")

	// helm uninstall: the pods go with the Deployment.
	_, err = h.uninstall(releaseName)
	require.NoError(t, err)
	require.NoError(t, ctrl.stop(t))
	assert.Empty(t, h.releases(t), "no release left")
	for _, name := range []string{controllerName, "liqo-remote-controlplane", "liqo-virtual-kubelet-remote-clusterwide"} {
		_, err := p.admin.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "ClusterRole %s removed with the release: %v", name, err)
	}
	_, err = p.admin.AppsV1().Deployments(releaseNamespace).Get(ctx, controllerName, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the Deployment removed with the release: %v", err)
	// What stays.
	assert.ElementsMatch(t, []string{"identities.authentication.liqo.io", "renews.authentication.liqo.io",
		"resourceslices.authentication.liqo.io", "tenants.authentication.liqo.io"}, authCRDs(ctx, t, p), "the CRDs stay")
	tn := tenantOf(ctx, t, p, pr)
	assert.Nil(t, tn.DeletionTimestamp)
	assert.Contains(t, tn.Finalizers, tenant.Finalizer, "the Tenant keeps the finalizer the controller put")
	_, err = p.admin.CoreV1().Namespaces().Get(ctx, clusterid.TenantNamespace(pr.consumerID), metav1.GetOptions{})
	assert.NoError(t, err, "the tenant namespace stays")
	assert.Equal(t, pr.providerID, recordedID(ctx, t, p), "the cluster's ID record stays")
	requireNoneTerminating(ctx, t, p)
	// Helm leaves the namespace it created; deleting it finishes.
	deleteAndWait(ctx, t, p, nil, []string{releaseNamespace})

	// Removing the peers' records, as the README says, finishes.
	removeTenantFinalizers(ctx, t, p)
	deleteAndWait(ctx, t, p, authCRDs(ctx, t, p), tenantNamespaces(ctx, t, p, liqoNamespace))
	requireNoneTerminating(ctx, t, p)
}

// requireReleaseObjects checks that every object of rel's manifest exists
// on e, owned by the release as Helm marks it.
func requireReleaseObjects(ctx context.Context, t *testing.T, e *env, rel *release.Release) {
	t.Helper()
	for _, u := range manifestObjects(t, rel.Manifest) {
		gvr, err := e.typed.RESTMapper().RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version)
		require.NoError(t, err, "%s", objectKey(u))
		got, err := e.dynamic.Resource(gvr.Resource).Namespace(u.GetNamespace()).Get(ctx, u.GetName(), metav1.GetOptions{})
		require.NoError(t, err, "%s installed", objectKey(u))
		assert.Equal(t, rel.Name, got.GetAnnotations()["meta.helm.sh/release-name"], "%s: its release", objectKey(u))
	}
}

// heldSecret returns the data of the consumer's kubeconfig Secret for its
// provider.
func heldSecret(ctx context.Context, t *testing.T, c *env, pr peering) map[string][]byte {
	t.Helper()
	s, err := c.admin.CoreV1().Secrets(pr.done.Secret.Namespace).Get(ctx, pr.done.Secret.Name, metav1.GetOptions{})
	require.NoError(t, err)
	return s.Data
}

// leaseHolder returns who holds the controller's Lease in kubepact-system.
func leaseHolder(ctx context.Context, t *testing.T, e *env) string {
	t.Helper()
	l, err := e.admin.CoordinationV1().Leases(releaseNamespace).Get(ctx, leaseName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ""
	}
	require.NoError(t, err)
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}
