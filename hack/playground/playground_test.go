//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/internal/testcluster"
	"github.com/kubepact/kubepact/internal/testenv"
)

// TestPlayground runs the playground as a user does: up as README.md's "Try it locally" writes
// it, then the three commands it prints (the CLI it built, on its two clusters and their
// controllers), its status, up again (already up), and down as the README writes it, after
// which no process up started runs and the state directory, which held everything, is gone.
func TestPlayground(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	upLine, downLine := readmeLine(t, "hack/playground.sh up"), readmeLine(t, "hack/playground.sh down")
	binDir, err := testcluster.EnsureBinaries(ctx)
	require.NoError(t, err)
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	stateDir := filepath.Join(t.TempDir(), "state")
	env := testenv.New(t, testenv.Options{Programs: []string{"bash", "kubectl"}, Go: true,
		Set: []string{testcluster.BinDirEnv + "=" + binDir, "KUBEPACT_PLAYGROUND_DIR=" + stateDir}})
	sh := func(ctx context.Context, line string) (string, error) {
		cmd := exec.CommandContext(ctx, "bash", "-c", line)
		cmd.Dir, cmd.Env = repo, env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		t.Logf("$ %s\n%s%s", line, stderr.String(), stdout.String())
		return stdout.String(), err
	}
	// A failed test leaves nothing running either.
	t.Cleanup(func() {
		if _, err := os.Stat(stateDir); err == nil {
			_, _ = sh(context.Background(), "hack/playground.sh down")
		}
	})

	begin := time.Now()
	out, err := sh(ctx, upLine)
	require.NoError(t, err)
	t.Logf("up in %s", time.Since(begin).Round(time.Second))
	commands := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		if strings.HasPrefix(line, "  ") && len(fields) > 1 && strings.HasSuffix(fields[0], "/kubepact") {
			commands[fields[1]] = strings.TrimSpace(line)
		}
	}
	require.Len(t, commands, 3, "up prints the commands to authenticate, status and unauthenticate: %v", commands)
	st, err := load(stateDir)
	require.NoError(t, err)
	procs := st.processes()
	require.Len(t, procs, 8, "etcd, kube-apiserver, kube-controller-manager and kubepact-controller, twice")
	for _, p := range procs {
		require.True(t, p.alive(), "%s/%s runs after up returned", p.Cluster, p.Name)
	}

	out, err = sh(ctx, commands["authenticate"])
	require.NoError(t, err)
	require.Contains(t, out, "Kubeconfig Secret")
	out, err = sh(ctx, commands["status"])
	require.NoError(t, err)
	require.Regexp(t, `(?m)^cl-\S+\s+provider\s+Ready\s`, out)
	_, err = sh(ctx, "hack/playground.sh status")
	require.NoError(t, err)
	out, err = sh(ctx, "hack/playground.sh up")
	require.NoError(t, err)
	require.Contains(t, out, "already up")
	out, err = sh(ctx, commands["unauthenticate"])
	require.NoError(t, err)
	require.Contains(t, out, "no longer authenticated")

	_, err = sh(ctx, downLine)
	require.NoError(t, err)
	for _, p := range procs {
		require.False(t, p.alive(), "%s/%s (pid %d) runs after down", p.Cluster, p.Name, p.PID)
	}
	_, err = os.Stat(stateDir)
	require.True(t, errors.Is(err, os.ErrNotExist), "the state directory is gone after down: %v", err)
	_, err = sh(ctx, "hack/playground.sh status")
	require.Error(t, err, "status says it is not up")
}

// readmeLine returns the line of the first sh block of README.md's "## Try it locally" that
// starts with prefix.
func readmeLine(t *testing.T, prefix string) string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "\n## Try it locally\n")
	require.True(t, ok, `README.md has "## Try it locally"`)
	_, block, ok := strings.Cut(section, "\n```sh\n")
	require.True(t, ok, `README.md's "## Try it locally" has an sh block`)
	block, _, _ = strings.Cut(block, "\n```\n")
	for _, line := range strings.Split(block, "\n") {
		if strings.HasPrefix(line, prefix) {
			return line
		}
	}
	t.Fatalf(`README.md's "## Try it locally" has no line %q...:\n%s`, prefix, block)
	return ""
}

func TestQuote(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/tmp/state/bin/kubepact": "/tmp/state/bin/kubepact",
		"/home/a b/kubeconfig":    "'/home/a b/kubeconfig'",
		"it's":                    `'it'\''s'`,
		"":                        "''",
	} {
		require.Equal(t, want, quote(in), "quote(%q)", in)
	}
}
