package prevbuild_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/internal/prevbuild"
	"github.com/kubepact/kubepact/internal/testenv"
)

// gitIn runs git in dir with a fixed identity, in an environment of its
// own, and returns its output.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=test", "-c", "user.email=test@example.com",
		"-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Env = testenv.New(t, testenv.Options{Programs: []string{"git"}})
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

// writeFiles writes files, by path relative to dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	}
}

// history makes a repository of two commits, each a module with a
// cmd/kubepact-controller that prints its version, and returns its
// directory and the two commits' hashes.
func history(t *testing.T) (dir, first, second string) {
	t.Helper()
	dir = t.TempDir()
	gitIn(t, dir, "init", "-q")
	for _, v := range []string{"one", "two"} {
		writeFiles(t, dir, map[string]string{
			"go.mod":                          "module example.com/prev\n\ngo 1.22\n",
			"cmd/kubepact-controller/main.go": "package main\n\nfunc main() { println(\"" + v + "\") }\n",
			"config/version":                  v + "\n",
		})
		gitIn(t, dir, "add", "-A")
		gitIn(t, dir, "commit", "-q", "-m", v)
		if v == "one" {
			first = gitIn(t, dir, "rev-parse", "HEAD")
		}
	}
	return dir, first, gitIn(t, dir, "rev-parse", "HEAD")
}

// TestBuild builds the first of two commits from a directory inside the
// repository: its binary runs as that commit's, its tree is that commit's,
// and the second call, for the commit by another name, finds both in the
// cache without building again.
func TestBuild(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	repo, first, _ := history(t)
	cache := t.TempDir()
	opts := &prevbuild.Options{Dir: filepath.Join(repo, "cmd"), CacheDir: cache}
	bin, tree, err := prevbuild.Build(ctx, first, opts)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(cache, "prev-"+first, "kubepact-controller"), bin)
	run := exec.Command(bin)
	run.Env = testenv.New(t, testenv.Options{})
	out, err := run.CombinedOutput()
	require.NoError(t, err)
	assert.Equal(t, "one\n", string(out), "the first commit's binary")
	v, err := os.ReadFile(filepath.Join(tree, "config", "version"))
	require.NoError(t, err)
	assert.Equal(t, "one\n", string(v), "the first commit's tree")
	built, err := os.Stat(bin)
	require.NoError(t, err)

	again, againTree, err := prevbuild.Build(ctx, first[:12], opts)
	require.NoError(t, err)
	assert.Equal(t, bin, again)
	assert.Equal(t, tree, againTree)
	reused, err := os.Stat(again)
	require.NoError(t, err)
	assert.Equal(t, built.ModTime(), reused.ModTime(), "found in the cache, not built again")
}

// TestBuildRefuses: a commit the repository does not hold is a
// *MissingCommitError, which says whether the clone is shallow (the usual
// reason in CI), and a directory outside any repository is ErrNoRepository.
func TestBuildRefuses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	repo, first, _ := history(t)
	shallow := filepath.Join(t.TempDir(), "shallow")
	gitIn(t, repo, "clone", "-q", "--depth=1", "file://"+repo, shallow)
	noRepo := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(noRepo, ".git"), []byte("gitdir: "+filepath.Join(noRepo, "none")+"\n"), 0o644),
		"a .git that leads nowhere, so that git looks no further up")

	for _, tt := range []struct {
		name, dir, commit string
		want              *prevbuild.MissingCommitError
	}{
		{"no such commit", repo, "0123456789abcdef0123456789abcdef01234567", &prevbuild.MissingCommitError{Commit: "0123456789abcdef0123456789abcdef01234567"}},
		{"no such name", repo, "v0.0.9", &prevbuild.MissingCommitError{Commit: "v0.0.9"}},
		{"shallow clone", shallow, first, &prevbuild.MissingCommitError{Commit: first, Shallow: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cache := t.TempDir()
			_, _, err := prevbuild.Build(ctx, tt.commit, &prevbuild.Options{Dir: tt.dir, CacheDir: cache})
			var missing *prevbuild.MissingCommitError
			require.ErrorAs(t, err, &missing)
			assert.Equal(t, tt.want, missing)
			entries, err := os.ReadDir(cache)
			require.NoError(t, err)
			assert.Empty(t, entries, "nothing cached")
		})
	}
	t.Run("no repository", func(t *testing.T) {
		_, _, err := prevbuild.Build(ctx, first, &prevbuild.Options{Dir: noRepo, CacheDir: t.TempDir()})
		require.ErrorIs(t, err, prevbuild.ErrNoRepository)
	})
}
