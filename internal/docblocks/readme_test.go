package docblocks_test

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/internal/docblocks"
	"github.com/kubepact/kubepact/internal/testenv"
)

// root is the repository's root, from this package's directory.
const root = "../.."

// TestREADMEFirstLines: a newcomer reading the README's first 100 lines
// finds the in-memory run, the playground up to a first peering (up, the
// commands to peer, inspect and unpeer, down), a quick test command and
// how long go install takes.
func TestREADMEFirstLines(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	lines := strings.SplitAfter(string(b), "\n")
	require.Greater(t, len(lines), 100)
	first := strings.Join(lines[:100], "")
	blocks, err := docblocks.Parse("README.md", first)
	require.NoError(t, err, "no block is cut at line 100")
	var sh strings.Builder
	for _, bl := range blocks {
		if bl.Lang == "sh" {
			sh.WriteString(bl.Text)
		}
	}
	for _, want := range []string{
		"go run ./examples/inmemory\n",
		"hack/playground.sh up ",
		"$pg/bin/kubepact authenticate --kubeconfig $pg/consumer.kubeconfig --remote-kubeconfig $pg/provider.kubeconfig\n",
		"$pg/bin/kubepact status --kubeconfig $pg/consumer.kubeconfig\n",
		"$pg/bin/kubepact unauthenticate --kubeconfig $pg/consumer.kubeconfig --remote-kubeconfig $pg/provider.kubeconfig\n",
		"hack/playground.sh down ",
	} {
		assert.Contains(t, sh.String(), want, "an sh block of the README's first 100 lines")
	}
	assert.Contains(t, first, "`go test . ./examples/...`", "a quick test command")
	assert.Regexp(t, regexp.MustCompile("`go install ./cmd/kubepact` builds the CLI in about \\d+ s"), first, "the build time")
}

// TestInMemoryBlocks runs the blocks that need no cluster as written: the
// README's "## Try it in 60 seconds", with bash from the repository's
// root, and the Go snippet of docs/library.md's "## In memory", as the
// body of a function that returns an error, with go run.
func TestInMemoryBlocks(t *testing.T) {
	t.Parallel()
	repo, err := filepath.Abs(root)
	require.NoError(t, err)

	t.Run("try it in 60 seconds", func(t *testing.T) {
		t.Parallel()
		blocks, err := docblocks.Section(repo, "## Try it in 60 seconds", "sh")
		require.NoError(t, err)
		require.Len(t, blocks, 1)
		out := run(t, repo, exec.CommandContext(t.Context(), "bash", "-c", "set -euo pipefail\n"+blocks[0].Text))
		assert.Contains(t, out, "user:      cl-consumer\n")
		assert.Contains(t, out, "namespace: liqo-tenant-cl-consumer\n")
	})

	t.Run("library in memory", func(t *testing.T) {
		t.Parallel()
		blocks, err := docblocks.Section(repo, "## In memory", "go")
		require.NoError(t, err)
		require.Len(t, blocks, 1)
		assert.NotRegexp(t, `(?m)(^|, )_[ ,]`, blocks[0].Text, "no error is discarded")
		src := `package main

import (
	"context"
	"fmt"
	"log"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/wire/memory"
)

func main() {
	if err := run(context.Background()); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) error {
` + blocks[0].Text + `	return nil
}
`
		file := filepath.Join(t.TempDir(), "main.go")
		require.NoError(t, os.WriteFile(file, []byte(src), 0o600))
		out := run(t, repo, exec.CommandContext(t.Context(), "go", "run", file))
		assert.Regexp(t, `^https://\S+ cl-consumer liqo-tenant-cl-consumer\n$`, out)
	})
}

// run runs cmd from dir in an environment of its own with go and bash, and
// returns what it printed; it fails t unless cmd exits 0.
func run(t *testing.T, dir string, cmd *exec.Cmd) string {
	t.Helper()
	cmd.Dir = dir
	cmd.Env = testenv.New(t, testenv.Options{Programs: []string{"bash"}, Go: true})
	start := time.Now()
	out, err := cmd.Output()
	var stderr string
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = string(ee.Stderr)
	}
	require.NoError(t, err, "%s\n%s", out, stderr)
	t.Logf("%s ran in %s", cmd.Args, time.Since(start).Round(time.Millisecond))
	return string(out)
}

// section names the sh and go blocks of one section of README.md or
// docs/*.md.
type section struct {
	file, heading string
}

// runBy names, for each section whose sh and go blocks tests run, the test
// that runs each block, in order. Each test's file names the heading.
var runBy = map[section][]string{
	{"README.md", "## Try it in 60 seconds"}:    {"TestInMemoryBlocks"},
	{"README.md", "## Peer two local clusters"}: {"TestPlayground"},
	// TestREADMERealClusters holds it to Example_realClusters, which
	// TestREADMESnippet runs on real clusters.
	{"README.md", "## Use it as a library"}:                                     {"TestREADMERealClusters"},
	{"README.md", "## The CLI"}:                                                 {"TestREADMEInstall", "TestREADMECLIBlock"},
	{"docs/library.md", "## In memory"}:                                         {"TestInMemoryBlocks"},
	{"docs/older-flows.md", "## Where no controller runs: --local and offline"}: {"TestREADMECLIBlock"},
}

// notRun lists the sections whose sh and go blocks no test runs as written,
// with how many blocks each holds and why. It may only shrink: a new block
// must be run by a test (runBy) or explained here.
var notRun = map[section]struct {
	blocks int
	why    string
}{
	{"README.md", "## Install on your clusters"}:                                 {1, "helm and kubectl on clusters that run Pods; test/helm installs the chart and config/ with the same commands' effects"},
	{"docs/development.md", "# Developing kubepact"}:                             {5, "the test, benchmark, fuzz and code generation commands themselves; .ci/run runs the tests and fuzzing"},
	{"docs/gitops.md", "## On the provider"}:                                     {2, "helm on clusters that run Pods, and a placeholder URL; TestPeeringFromGit (controllers) and TestGeneratePeering (cmd/kubepact) run the same steps"},
	{"docs/gitops.md", "## On the consumer"}:                                     {1, "placeholders (PROVIDER) and a provider that commits; TestPeeringFromGit and TestGeneratePeering run the same steps"},
	{"docs/install.md", "## Install with Helm"}:                                  {2, "helm on clusters that run Pods; test/helm installs, upgrades and migrates from v0.1.0 with Helm's packages"},
	{"docs/install.md", "## Image"}:                                              {1, "pushes to a registry or a node's containerd; .ci/run builds the image and checks its index"},
	{"docs/lifecycle.md", "# Cordon, drain and revoke a tenant"}:                 {2, "placeholders (CONSUMER); cmd/kubepact's lifecycle_test.go runs these commands"},
	{"docs/metrics.md", "# Metrics"}:                                             {1, "binds a Prometheus ServiceAccount that only a monitoring stack has"},
	{"docs/older-flows.md", "## Shared-token authentication (Liqo v0.2–v0.10)"}:  {2, "placeholders (PROVIDER, the server's host); TestTokenServerServiceAccount runs serve and get token"},
	{"docs/older-flows.md", "### Running the server under its own identity"}:     {2, "a kubeconfig of the current context and a long-running server; a benchmark"},
	{"docs/older-flows.md", "## ServiceAccount identities with expiring tokens"}: {1, "placeholders (CONSUMER, PROVIDER); TestServiceAccountIssuer runs these commands"},
	{"docs/older-flows.md", "### Who may issue"}:                                 {1, "an issuer kubeconfig built by hand; TestServiceAccountIssuer runs these commands"},
	{"docs/resourceslices.md", "# ResourceSlices"}:                               {2, "placeholders (PROVIDER), run by cmd/kubepact's slices_test.go; a benchmark"},
	{"docs/scale.md", "# Operating at scale"}:                                    {1, "a benchmark of about 17 minutes"},
}

// TestEveryBlockRun fails when an sh or go block of README.md or docs/*.md
// is neither run by a test named in runBy nor explained in notRun, and
// when either list names what is not there.
func TestEveryBlockRun(t *testing.T) {
	t.Parallel()
	blocks, err := docblocks.All(root)
	require.NoError(t, err)
	found := map[section]int{}
	for _, b := range blocks {
		if b.Lang == "sh" || b.Lang == "go" {
			found[section{b.File, b.Heading}]++
		}
	}
	for s, n := range found {
		tests, run := runBy[s]
		skipped, explained := notRun[s]
		switch {
		case run && explained:
			t.Errorf("%s %q is in both runBy and notRun", s.file, s.heading)
		case run && len(tests) != n:
			t.Errorf("%s %q has %d sh and go blocks; runBy names a test for %d", s.file, s.heading, n, len(tests))
		case explained && skipped.blocks != n:
			t.Errorf("%s %q has %d sh and go blocks; notRun explains %d", s.file, s.heading, n, skipped.blocks)
		case !run && !explained:
			t.Errorf("%s %q has %d sh or go blocks that no test runs: run them in a test and name it in runBy", s.file, s.heading, n)
		}
	}
	for s := range runBy {
		if found[s] == 0 {
			t.Errorf("runBy names %s %q, which has no sh or go block", s.file, s.heading)
		}
	}
	for s := range notRun {
		if found[s] == 0 {
			t.Errorf("notRun names %s %q, which has no sh or go block", s.file, s.heading)
		}
	}

	// Each test runBy names is declared in a test file that names the
	// section's heading.
	testFiles := map[string]string{} // test name: its file's text
	decl := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
			testFiles[m[1]] = string(b)
		}
		return nil
	}))
	for s, tests := range runBy {
		for _, name := range tests {
			text, ok := testFiles[name]
			if !assert.True(t, ok, "runBy names %s for %s %q: no such test", name, s.file, s.heading) {
				continue
			}
			assert.Contains(t, text, fmt.Sprintf("%q", s.heading), "%s's file names the heading it reads", name)
		}
	}
}
