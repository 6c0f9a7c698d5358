package main

import (
	"bytes"
	"context"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubepact/kubepact/internal/testenv"
)

// cliErr runs the CLI in-process over e (stdin empty when e.stdin is nil)
// and returns what it printed, its exit code and the error the command
// returned, for errors.Is and errors.As.
func cliErr(t testing.TB, e *env, args ...string) (result, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if e == nil {
		e = &env{}
	}
	if e.stdin == nil {
		e.stdin = strings.NewReader("")
	}
	e.stdout, e.stderr = &stdout, &stderr
	cmd, err := execute(context.Background(), e, args)
	code := report(e, cmd, err)
	r := result{code: code, stdout: stdout.String(), stderr: stderr.String()}
	for _, s := range neverPrinted {
		if strings.Contains(r.stdout, s) || strings.Contains(r.stderr, s) {
			t.Fatalf("kubepact %s printed %q:\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), s, r.stdout, r.stderr)
		}
	}
	return r, err
}

// leaves returns the path (without "kubepact ") of every command of the
// tree that runs something, and calls each on every command.
func walk(c *cobra.Command, each func(*cobra.Command)) {
	each(c)
	for _, sub := range c.Commands() {
		walk(sub, each)
	}
}

// TestPackageDocListsEveryCommand keeps the command list of the package
// doc equal to the command tree, and checks that every command's --help
// has an example.
func TestPackageDocListsEveryCommand(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	require.NoError(t, err)
	doc := f.Doc.Text()
	start := strings.Index(doc, "The commands, by who runs them")
	require.GreaterOrEqual(t, start, 0, "the package doc has the command list")
	var documented []string
	line := regexp.MustCompile(`^\t(\S.*?)\s{2,}\S`)
	for _, l := range strings.Split(doc[start:], "\n")[3:] {
		if l == "" {
			break
		}
		m := line.FindStringSubmatch(l)
		require.NotNil(t, m, "a command line of the package doc: %q", l)
		documented = append(documented, m[1])
	}

	var tree []string
	walk(newRootCommand(&env{}), func(c *cobra.Command) {
		if c.Hidden || !c.HasParent() {
			return
		}
		assert.NotEmpty(t, c.Example, "%s has an example", c.CommandPath())
		if !c.HasSubCommands() {
			tree = append(tree, strings.TrimPrefix(c.CommandPath(), "kubepact "))
		}
	})
	slices.Sort(tree)
	slices.Sort(documented)
	assert.Equal(t, tree, documented, "the package doc lists every command of the tree, and only those")
}

// TestHelpHasExample runs --help of every command: each exits 0 and prints
// its example.
func TestHelpHasExample(t *testing.T) {
	t.Parallel()
	walk(newRootCommand(&env{}), func(c *cobra.Command) {
		if c.Hidden {
			return
		}
		args := append(strings.Fields(strings.TrimPrefix(c.CommandPath(), "kubepact")), "--help")
		r, err := cliErr(t, nil, args...)
		require.NoError(t, err, args)
		assert.Contains(t, r.stdout, "Examples:\n", args)
	})
}

func TestCompletion(t *testing.T) {
	t.Parallel()
	for shell, marker := range map[string]string{
		"bash":       "__start_kubepact",
		"zsh":        "#compdef kubepact",
		"fish":       "complete -c kubepact",
		"powershell": "Register-ArgumentCompleter",
	} {
		r, err := cliErr(t, nil, "completion", shell)
		require.NoError(t, err, shell)
		assert.Contains(t, r.stdout, marker, shell)
	}
	// The scripts complete the commands: cobra's completion entry point
	// answers with the command tree.
	r, err := cliErr(t, nil, cobra.ShellCompRequestCmd, "get", "")
	require.NoError(t, err)
	for _, want := range []string{"kubeconfig", "tenant", "identity", "nonce", "resourceslice", "token"} {
		assert.Contains(t, r.stdout, want+"\t")
	}
}

// TestKubectlPlugin builds the CLI as kubectl-kubepact and runs it through
// kubectl, with a PATH of only its directory and kubectl's: a
// kubectl-kubepact the developer installed (as the README's install block
// does) or another plugin of theirs does not show.
func TestKubectlPlugin(t *testing.T) {
	t.Parallel()
	kubectl, err := exec.LookPath("kubectl")
	require.NoError(t, err, "kubectl must be on the PATH")
	dir := t.TempDir()
	build := exec.Command("go", "build", "-ldflags", "-X main.version=v9.8.7-test", "-o", filepath.Join(dir, "kubectl-kubepact"), ".")
	build.Env = testenv.New(t, testenv.Options{Go: true})
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	env := testenv.New(t, testenv.Options{Dirs: []string{dir}, Programs: []string{kubectl}})
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(kubectl, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "kubectl %s: %s", strings.Join(args, " "), out)
		return string(out)
	}
	assert.Equal(t, "Client Version: v9.8.7-test\n", run("kubepact", "version", "--client"))
	assert.Contains(t, run("plugin", "list"), filepath.Join(dir, "kubectl-kubepact"))
	help := run("kubepact", "get", "kubeconfig", "--help")
	assert.Contains(t, help, "Usage:\n  kubectl kubepact get kubeconfig ")
	assert.Contains(t, help, "--remote-cluster-id string")
}

// TestUsageErrorsOfNewCommands: command lines that cannot run are usage
// errors (exit 2), refused before any cluster is contacted.
func TestUsageErrorsOfNewCommands(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"get", "kubeconfig"},
		{"get", "kubeconfig", "--remote-cluster-id", "Not_An_ID"},
		{"get", "kubeconfig", "--remote-cluster-id", "cl-p", "extra"},
		{"get", "tenant", "a", "b"},
		{"get", "tenant", "Not_An_ID"},
		{"get", "identity", "-o", "xml"},
		{"get", "nonce", "--remote-cluster-id", "cl-c", "-o", "jsonpath={.bad"},
		{"status", "extra"},
		{"version", "extra"},
		{"authenticate", "--remote-kubeconfig", "p", "--api-server-url", "https://p.example"},
		{"authenticate", "--remote-kubeconfig", "p", "--policy", "strict"},
		{"frobnicate"},
		{},
	} {
		r, err := cliErr(t, nil, args...)
		var usage *usageError
		require.ErrorAs(t, err, &usage, "%q", args)
		assert.Equal(t, exitUsage, r.code, "%q", args)
		assert.Empty(t, r.stdout, "%q", args)
	}
}

// TestLeaseHeld tells a held, renewed Lease from a released or stale one.
func TestLeaseHeld(t *testing.T) {
	t.Parallel()
	now := time.Now()
	lease := func(holder string, renewed time.Duration) *coordinationv1.Lease {
		return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](15),
			RenewTime: &metav1.MicroTime{Time: now.Add(-renewed)},
		}}
	}
	assert.True(t, held(lease("pod-a", 5*time.Second), now))
	assert.False(t, held(lease("", 5*time.Second), now), "released")
	assert.False(t, held(lease("pod-a", time.Minute), now), "stale")
	assert.False(t, held(&coordinationv1.Lease{}, now), "never held")
}
