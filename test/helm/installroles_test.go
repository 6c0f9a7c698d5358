package helm

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/release"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/rbac"
)

// TestInstallRolesThenHelm: an operator runs kubepact install roles on a
// bare provider, then helm install of the chart.
//
//   - Without --helm-release, install roles says, as it finishes, that Helm
//     will refuse the roles and names --set peerRoles.create=false; helm
//     install with the defaults is refused before it changes anything (no
//     release, no Deployment, the roles as they were), and with
//     --set peerRoles.create=false it installs.
//   - With --helm-release and --helm-namespace, helm install of that
//     release with the defaults adopts the roles: they become the
//     release's, with the chart's rules, and helm uninstall removes them.
func TestInstallRolesThenHelm(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p, _ := clusters(t)
	t.Cleanup(func() { wipe(t, p) })
	ch := loadChart(t, chartDir)
	installRoles := func(args ...string) (string, string) {
		cmd := exec.CommandContext(ctx, kubepactCLI(t), append([]string{"install", "roles", "--kubeconfig", p.kubeconfig}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
		var stdout, stderr lockedBuffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Run(), "kubepact install roles %v:\n%s%s", args, stdout.String(), stderr.String())
		return stdout.String(), stderr.String()
	}

	t.Run("refused, then peerRoles.create=false", func(t *testing.T) {
		t.Cleanup(func() { wipe(t, p) })
		_, stderr := installRoles()
		assert.Contains(t, stderr, "install it with --set peerRoles.create=false")
		before, err := p.admin.RbacV1().ClusterRoles().Get(ctx, rbac.ControlPlaneClusterRoleName, metav1.GetOptions{})
		require.NoError(t, err)

		h := newHelm(t, p, releaseNamespace)
		_, err = h.install(ctx, releaseName, ch, nil)
		require.Error(t, err, "helm install takes no role install roles made")
		// Helm's own refusal (a plain error): it names the object.
		assert.Contains(t, err.Error(), rbac.ControlPlaneClusterRoleName)
		assert.Empty(t, h.releases(t), "no release recorded")
		_, err = p.admin.AppsV1().Deployments(releaseNamespace).Get(ctx, controllerName, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "no Deployment after the refusal: %v", err)
		after, err := p.admin.RbacV1().ClusterRoles().Get(ctx, rbac.ControlPlaneClusterRoleName, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, before.ResourceVersion, after.ResourceVersion, "the role unchanged by the refusal")

		rel, err := h.install(ctx, releaseName, ch, values("peerRoles.create", false))
		require.NoError(t, err, "helm install --set peerRoles.create=false, as install roles said")
		require.Equal(t, release.StatusDeployed, rel.Info.Status)
		requireReleaseObjects(ctx, t, p, rel)
	})

	t.Run("--helm-release", func(t *testing.T) {
		t.Cleanup(func() { wipe(t, p) })
		_, stderr := installRoles("--helm-release", releaseName, "--helm-namespace", releaseNamespace)
		assert.Contains(t, stderr, "helm install "+releaseName+" charts/kubepact -n "+releaseNamespace+" adopts them")
		h := newHelm(t, p, releaseNamespace)
		rel, err := h.install(ctx, releaseName, ch, nil)
		require.NoError(t, err, "helm install adopts the roles install roles marked")
		require.Equal(t, release.StatusDeployed, rel.Info.Status)
		requireReleaseObjects(ctx, t, p, rel)
		for _, name := range rbac.PeerRoleNames() {
			live, err := p.admin.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			rendered := find(manifestObjects(t, rel.Manifest), "ClusterRole", name)
			require.NotNil(t, rendered, "the chart renders %s", name)
			assert.Equal(t, rendered.GetLabels(), live.Labels, "%s: the chart's labels", name)
		}
		_, err = h.uninstall(releaseName)
		require.NoError(t, err)
		for _, name := range rbac.PeerRoleNames() {
			_, err := p.admin.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
			assert.True(t, apierrors.IsNotFound(err), "ClusterRole %s removed with the release: %v", name, err)
		}
	})

	t.Run("--helm-release alone", func(t *testing.T) {
		cmd := exec.CommandContext(ctx, kubepactCLI(t), "install", "roles", "--kubeconfig", p.kubeconfig, "--helm-release", releaseName)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%s", out)
		assert.Equal(t, 2, exit.ExitCode(), "a usage error")
		assert.Contains(t, string(out), "--helm-release and --helm-namespace go together")
		_, err = p.admin.RbacV1().ClusterRoles().Get(ctx, rbac.ControlPlaneClusterRoleName, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "nothing installed: %v", err)
	})
}
