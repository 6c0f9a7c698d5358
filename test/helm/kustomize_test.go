package helm

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/internal/testenv"
	"github.com/kubepact/kubepact/tenant"
)

// kubectl runs kubectl with e's administrator kubeconfig, from the
// repository root, as the README's commands run, in an environment of its
// own (no plugin, cache or kubeconfig of the developer's), and fails t on an
// error with kubectl's output. kubectl delete waits for what it deletes to be
// gone, up to the --timeout each call passes.
func kubectl(ctx context.Context, t *testing.T, e *env, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", e.kubeconfig}, args...)...)
	cmd.Dir = root
	cmd.Env = testenv.New(t, testenv.Options{Kubeconfig: e.kubeconfig, Programs: []string{"kubectl"}})
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "kubectl %v:\n%s", args, out)
}

// TestKustomizeUninstall installs config/ as the README does (kubectl
// apply -k config/), runs the controller with its Deployment's args and
// makes a peering, then uninstalls in the README's two steps, each of
// which finishes, with no namespace or CRD left Terminating:
//
//  1. kubepact goes, the peers' records stay: kubectl delete -k
//     config/controller/, config/signed-nonce-policy/ and config/key-policy/ (the Deployment's
//     pods stop); the CRDs, the peer roles, the consumer's Tenant with its
//     finalizer and its tenant namespace, and the ID record stay.
//  2. the records go too: with no controller left to remove the Tenants'
//     finalizer, clear it, then kubectl delete -k config/
//     --ignore-not-found and the tenant and key namespaces.
//
// kubectl delete -k config/ in one step, with peerings and the controller
// going at once, would wait forever: the CRDs' deletion waits for the
// Tenants, whose finalizer only the controller removes.
func TestKustomizeUninstall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	p, _ := clusters(t)
	t.Cleanup(func() { wipe(t, p) })
	publishClusterInfo(ctx, t, p)
	kubectl(ctx, t, p, "apply", "-k", "config/")
	eventually(t, "the CRDs served", func() bool {
		_, err := p.dynamic.Resource(tenantResource).Namespace("").List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil
	})
	deployment := deploymentOf(t, kustomizeObjects(t, "config"))
	ctrl := startController(t, p, releaseNamespace, deployment.Spec.Template.Spec.Containers[0].Args)
	ctrl.waitReady(t)
	pr := handshake(ctx, t, p)

	// Step 1.
	require.NoError(t, ctrl.stop(t))
	kubectl(ctx, t, p, "delete", "-k", "config/controller/", "--timeout=2m")
	kubectl(ctx, t, p, "delete", "-k", "config/signed-nonce-policy/", "--timeout=2m")
	kubectl(ctx, t, p, "delete", "-k", "config/key-policy/", "--timeout=2m")
	requireGone(ctx, t, p, nil, []string{releaseNamespace})
	requireNoneTerminating(ctx, t, p)
	assert.Len(t, authCRDs(ctx, t, p), 4, "the CRDs stay")
	for _, r := range peerRoles {
		_, err := p.admin.RbacV1().ClusterRoles().Get(ctx, r, metav1.GetOptions{})
		assert.NoError(t, err, "the peer role %s stays", r)
	}
	tn := tenantOf(ctx, t, p, pr)
	assert.Contains(t, tn.Finalizers, tenant.Finalizer, "the Tenant stays, with the finalizer")
	assert.Equal(t, pr.providerID, recordedID(ctx, t, p), "the ID record stays")

	// Step 2.
	removeTenantFinalizers(ctx, t, p)
	crds := authCRDs(ctx, t, p)
	kubectl(ctx, t, p, "delete", "-k", "config/", "--ignore-not-found", "--timeout=2m")
	requireGone(ctx, t, p, crds, nil)
	for _, r := range peerRoles {
		_, err := p.admin.RbacV1().ClusterRoles().Get(ctx, r, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "the peer role %s deleted: %v", r, err)
	}
	namespaces := tenantNamespaces(ctx, t, p, liqoNamespace)
	kubectl(ctx, t, p, append([]string{"delete", "namespace", "--timeout=2m"}, namespaces...)...)
	requireGone(ctx, t, p, nil, namespaces)
	requireNoneTerminating(ctx, t, p)
}
