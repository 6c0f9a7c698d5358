package liqo

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// kubepactCLI runs the kubepact CLI with args, in an environment of its
// own: no kubeconfig, home or plugin of whoever runs the suite.
func kubepactCLI(ctx context.Context, t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, bins.kubepact, args...)
	home := t.TempDir()
	cmd.Env = []string{"PATH=" + filepath.Dir(bins.kubepact), "HOME=" + home, "KUBECONFIG=" + filepath.Join(home, "none"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"), "XDG_CONFIG_HOME=" + filepath.Join(home, ".config")}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestKubepactCLIAgainstLiqoProvider: kubepact authenticate decides where
// the consumer's cluster key goes, whatever the provider shows of itself:
// by default the identity gets a key of its own. Liqo's provider refuses
// that CSR (InvalidCSR), and the CLI ends at once, before its timeout,
// naming --send-cluster-key; with it the handshake completes with the
// cluster key, and the CLI warns where the key lands. liqoctl's own
// handshakes are unchanged (TestInterop).
func TestKubepactCLIAgainstLiqoProvider(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, p := kubepactSide, liqoSide
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
