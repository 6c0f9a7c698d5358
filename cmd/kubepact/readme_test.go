package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/internal/docblocks"
	"github.com/kubepact/kubepact/internal/testenv"
	buildversion "github.com/kubepact/kubepact/internal/version"
)

// readmeBlock returns the first sh block of the section that starts with
// heading, in README.md or docs/*.md.
func readmeBlock(t *testing.T, heading string) string {
	t.Helper()
	blocks := readmeBlocks(t, heading)
	require.NotEmpty(t, blocks, "%q has an sh block", heading)
	return blocks[0]
}

// readmeBlocks returns every sh block of the section that starts with
// heading, subsections included, in README.md or docs/*.md.
func readmeBlocks(t *testing.T, heading string) []string {
	t.Helper()
	blocks, err := docblocks.Section(filepath.Join("..", ".."), heading, "sh")
	require.NoError(t, err)
	texts := make([]string, len(blocks))
	for i, b := range blocks {
		texts[i] = b.Text
	}
	return texts
}

// TestREADMEInstall runs the README's CLI install block as written, from
// the repository's root, with an empty GOBIN first on a PATH that holds
// besides only what the block runs (go, kubectl, bash, ln, chmod), in a HOME
// of its own: it installs kubepact, which the README's examples run, and
// the kubectl plugin; both print the version; bash completes kubepact and
// kubectl completes "kubectl kubepact".
func TestREADMEInstall(t *testing.T) {
	t.Parallel()
	kubectl, err := exec.LookPath("kubectl")
	require.NoError(t, err, "kubectl must be on the PATH")
	block := readmeBlock(t, "## The CLI")
	require.Contains(t, block, "go install ./cmd/kubepact", "the install block")

	bin := t.TempDir()
	env := testenv.New(t, testenv.Options{Dirs: []string{bin}, Programs: []string{"bash", kubectl, "ln", "chmod"}, Go: true,
		Set: []string{"GOBIN=" + bin}})
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	// The block as written, then what it set up, in the same shell.
	script := "set -euo pipefail\n" + block + "complete -p kubepact\n"
	cmd := exec.CommandContext(t.Context(), "bash", "-c", script)
	cmd.Dir, cmd.Env = root, env
	start := time.Now()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the README's install block:\n%s\n%s", block, out)
	t.Logf("the README's install block ran in %s:\n%s", time.Since(start).Round(time.Millisecond), out)

	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	require.Len(t, lines, 3, "two versions and the completion: %s", out)
	assert.True(t, strings.HasPrefix(lines[0], "Client Version: "+buildversion.File()), "kubepact version --client: %q", lines[0])
	assert.Equal(t, lines[0], lines[1], "kubectl kubepact version --client")
	assert.Contains(t, lines[2], "__start_kubepact kubepact", "bash completes kubepact")
	for _, name := range []string{"kubepact", "kubectl-kubepact", "kubectl_complete-kubepact"} {
		st, err := os.Stat(filepath.Join(bin, name))
		require.NoError(t, err, "%s installed in GOBIN", name)
		assert.NotZero(t, st.Mode().Perm()&0o111, "%s is executable", name)
	}

	// kubectl completes the plugin's commands through
	// kubectl_complete-kubepact, as a shell's kubectl completion asks it.
	complete := exec.CommandContext(t.Context(), kubectl, "__complete", "kubepact", "get", "")
	complete.Env = env
	out, err = complete.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, want := range []string{"kubeconfig", "tenant", "identity"} {
		assert.Contains(t, string(out), want+"\t", "kubectl __complete kubepact get")
	}
}
