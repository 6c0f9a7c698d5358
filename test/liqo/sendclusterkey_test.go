package liqo

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/internal/testenv"
)

// kubepactCLI runs the kubepact CLI with args, in an environment of its
// own: no kubeconfig, home or plugin of whoever runs the suite.
func kubepactCLI(ctx context.Context, t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, bins.kubepact, args...)
	cmd.Env = testenv.New(t, testenv.Options{Dirs: []string{filepath.Dir(bins.kubepact)}})
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestKubepactCLIAgainstLiqoProvider: kubepact authenticate decides where
// the consumer's cluster key goes, whatever the provider shows of itself:
// by default the identity gets a key of its own. Liqo's provider refuses
// that CSR (InvalidCSR), and the CLI ends at once, before its timeout,
// naming --send-cluster-key; with it the handshake completes with the
// cluster key, and the CLI warns where the key lands. liqoctl's own
// handshakes are unchanged (TestInterop, which runs first and leaves the
// kubepact cluster peered with the Liqo cluster as liqoctl does).
func TestKubepactCLIAgainstLiqoProvider(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, p := kubepactSide, liqoSide
	liqoDeployment(ctx, t, p)
	pair := []string{"--kubeconfig", c.kubeconfig, "--remote-kubeconfig", p.kubeconfig, "--timeout", "3m"}

	start := time.Now()
	out, err := kubepactCLI(ctx, t, append([]string{"authenticate"}, pair...)...)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "authenticate against Liqo's provider without --send-cluster-key:\n%s", out)
	require.Contains(t, out, "--send-cluster-key", "the CLI names the flag that sends the cluster key")
	require.NotContains(t, out, "raise --timeout", "it ends on Liqo's refusal, not on its timeout")
	t.Logf("refused in %s", time.Since(start).Round(time.Millisecond))

	out, err = kubepactCLI(ctx, t, append([]string{"authenticate", "--send-cluster-key"}, pair...)...)
	require.NoError(t, err, "authenticate --send-cluster-key:\n%s", out)
	require.True(t, strings.Contains(out, " WARN  --send-cluster-key"), "the CLI warns where the cluster key goes:\n%s", out)
	requireControlPlane(ctx, t, c, p)
}

// liqoDeployment shows on s the Deployment Liqo's chart installs, ready, as
// kubepact authenticate finds Liqo's controller manager on a real cluster:
// here it runs as a process, without leader election, so nothing else
// tells the CLI that a controller answers. The Deployment is gone after t.
func liqoDeployment(ctx context.Context, t *testing.T, s *side) {
	t.Helper()
	labels := map[string]string{"app.kubernetes.io/name": "controller-manager", "app.kubernetes.io/part-of": "liqo"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "liqo-controller-manager", Namespace: liqoNamespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "controller-manager", Image: "ghcr.io/liqotech/liqo-controller-manager:v1.2.0",
				}}},
			},
		},
	}
	d, err := s.admin.AppsV1().Deployments(liqoNamespace).Create(ctx, d, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = s.admin.AppsV1().Deployments(liqoNamespace).Delete(context.Background(), d.Name, metav1.DeleteOptions{})
	})
	d.Status = appsv1.DeploymentStatus{Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, UpdatedReplicas: 1, ObservedGeneration: d.Generation}
	_, err = s.admin.AppsV1().Deployments(liqoNamespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	require.NoError(t, err)
}
