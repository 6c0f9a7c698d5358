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

	"github.com/kubepact/kubepact/internal/docblocks"
	"github.com/kubepact/kubepact/internal/testcluster"
	"github.com/kubepact/kubepact/internal/testenv"
)

// TestPlayground runs the README's playground block ("## Peer two local clusters") as a user
// does, line by line from the repository's root, in a state directory of its own put where the
// block says the state directory is: up, then the three commands the block shows, which must be
// the ones up prints, on its two clusters and their controllers; between them the playground's
// status and up again (already up); and down as the block writes it, after which no process up
// started runs and the state directory, which held everything, is gone.
func TestPlayground(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	binDir, err := testcluster.EnsureBinaries(ctx)
	require.NoError(t, err)
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	stateDir := filepath.Join(t.TempDir(), "state")
	block := readmeBlock(t, repo, stateDir)
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
	out, err := sh(ctx, block.up)
	require.NoError(t, err)
	t.Logf("up in %s", time.Since(begin).Round(time.Second))
	commands := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		if strings.HasPrefix(line, "  ") && len(fields) > 1 && strings.HasSuffix(fields[0], "/kubepact") {
			commands[fields[1]] = strings.TrimSpace(line)
		}
	}
	require.Equal(t, block.printed, commands, "up prints the commands the README shows, with the paths of its state directory")
	st, err := load(stateDir)
	require.NoError(t, err)
	procs := st.processes()
	require.Len(t, procs, 8, "etcd, kube-apiserver, kube-controller-manager and kubepact-controller, twice")
	for _, p := range procs {
		require.True(t, p.alive(), "%s/%s runs after up returned", p.Cluster, p.Name)
	}

	out, err = sh(ctx, block.commands["authenticate"])
	require.NoError(t, err)
	require.Contains(t, out, "Kubeconfig Secret")
	out, err = sh(ctx, block.commands["status"])
	require.NoError(t, err)
	require.Regexp(t, `(?m)^cl-\S+\s+provider\s+Ready\s`, out)
	_, err = sh(ctx, "hack/playground.sh status")
	require.NoError(t, err)
	out, err = sh(ctx, "hack/playground.sh up")
	require.NoError(t, err)
	require.Contains(t, out, "already up")
	out, err = sh(ctx, block.commands["unauthenticate"])
	require.NoError(t, err)
	require.Contains(t, out, "no longer authenticated")

	_, err = sh(ctx, block.down)
	require.NoError(t, err)
	for _, p := range procs {
		require.False(t, p.alive(), "%s/%s (pid %d) runs after down", p.Cluster, p.Name, p.PID)
	}
	_, err = os.Stat(stateDir)
	require.True(t, errors.Is(err, os.ErrNotExist), "the state directory is gone after down: %v", err)
	_, err = sh(ctx, "hack/playground.sh status")
	require.Error(t, err, "status says it is not up")
}

// playgroundBlock is the README's playground block, as the test runs it.
type playgroundBlock struct {
	// up and down are its lines that start the playground and stop it.
	up, down string
	// commands are its lines that peer, inspect and unpeer, by subcommand, each with the
	// variable naming the state directory set first.
	commands map[string]string
	// printed are those commands with the state directory's path in place of the variable,
	// as up prints them.
	printed map[string]string
}

// readmeBlock reads the README's playground block, the only sh block of "## Peer two local
// clusters": up, the line naming the state directory (pg=~/.local/state/kubepact-playground),
// the three commands, down. The test runs them with stateDir where the block names the
// default.
func readmeBlock(t *testing.T, repo, stateDir string) playgroundBlock {
	t.Helper()
	blocks, err := docblocks.Section(repo, "## Peer two local clusters", "sh")
	require.NoError(t, err)
	require.Len(t, blocks, 1, `"## Peer two local clusters" has one sh block`)
	const stateLine = "pg=~/.local/state/kubepact-playground"
	pb := playgroundBlock{commands: map[string]string{}, printed: map[string]string{}}
	var sawState bool
	for _, line := range strings.Split(strings.TrimSuffix(blocks[0].Text, "\n"), "\n") {
		command, _, _ := strings.Cut(line, "#")
		command = strings.TrimSpace(command)
		fields := strings.Fields(command)
		switch {
		case command == "hack/playground.sh up":
			pb.up = command
		case command == "hack/playground.sh down":
			pb.down = command
		case command == stateLine:
			sawState = true
		case len(fields) > 1 && fields[0] == "$pg/bin/kubepact":
			require.True(t, sawState, "the block names the state directory before %q", line)
			pb.commands[fields[1]] = "pg=" + quote(stateDir) + "\n" + command
			pb.printed[fields[1]] = strings.ReplaceAll(command, "$pg", stateDir)
		default:
			t.Fatalf("the playground block has a line the test does not know: %q", line)
		}
	}
	require.NotEmpty(t, pb.up, "the block starts the playground")
	require.NotEmpty(t, pb.down, "the block stops the playground")
	require.Len(t, pb.commands, 3, "the block peers, inspects and unpeers")
	return pb
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
