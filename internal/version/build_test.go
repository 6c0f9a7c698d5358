package version

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/internal/testenv"
)

// repoRoot is the repository root, relative to this package.
var repoRoot = filepath.Join("..", "..")

// built is the version each binary of one build reports: the CLI's
// "version --client" and kubepact-controller's --version.
type built struct{ cli, controller string }

// build builds the CLI and kubepact-controller from the module at dir with
// goflags after the GOFLAGS in effect (the later flag wins) and the extra
// build arguments, and returns the versions they report and the directory
// that holds them. go and the binaries run in environments of their own.
func build(t *testing.T, dir, goflags string, args ...string) (built, string) {
	t.Helper()
	env := testenv.New(t, testenv.Options{Go: true})
	base, err := exec.CommandContext(t.Context(), "go", "env", "GOFLAGS").Output()
	require.NoError(t, err, "go env GOFLAGS")
	goflags = strings.TrimSpace(string(base) + " " + goflags)
	out := t.TempDir()
	cmd := exec.CommandContext(t.Context(), "go", append(append([]string{"build", "-trimpath"}, args...),
		"-o", out+string(filepath.Separator), "./cmd/kubepact", "./cmd/kubepact-controller")...)
	cmd.Dir = dir
	cmd.Env = append(env, "GOFLAGS="+goflags)
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build %s: %s", strings.Join(args, " "), b)

	run := func(name string, args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(t.Context(), filepath.Join(out, name), args...)
		cmd.Env = testenv.New(t, testenv.Options{})
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Run(), "%s %s: %s", name, strings.Join(args, " "), stderr.String())
		return stdout.String()
	}
	cli := run("kubepact", "version", "--client")
	require.True(t, strings.HasPrefix(cli, "Client Version: ") && strings.HasSuffix(cli, "\n"), "kubepact version --client: %q", cli)
	ctl := run("kubepact-controller", "--version")
	require.True(t, strings.HasPrefix(ctl, "kubepact-controller ") && strings.HasSuffix(ctl, "\n"), "kubepact-controller --version: %q", ctl)
	return built{
		cli:        strings.TrimSuffix(strings.TrimPrefix(cli, "Client Version: "), "\n"),
		controller: strings.TrimSuffix(strings.TrimPrefix(ctl, "kubepact-controller "), "\n"),
	}, out
}

// TestBuiltBinaries builds both binaries as a user would, one way per
// source of the version, and checks what their --version says: both say
// the same, the version set at link time wins, and a build that has no
// stamp, or a stamp of another revision than a release tag's, is VERSION
// with -dev.
func TestBuiltBinaries(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries")
	}
	dev := File() + devSuffix
	_, gitErr := exec.LookPath("git")
	_, statErr := os.Stat(filepath.Join(repoRoot, ".git"))
	checkout := gitErr == nil && statErr == nil

	t.Run("-ldflags wins", func(t *testing.T) {
		goflags := "-buildvcs=auto"
		if checkout {
			goflags = "-buildvcs=true" // the VCS stamp is there, and loses
		}
		got, _ := build(t, repoRoot, goflags, "-ldflags", "-X main.version=v9.8.7-test")
		assert.Equal(t, built{"v9.8.7-test", "v9.8.7-test"}, got)
	})

	t.Run("-buildvcs=false", func(t *testing.T) {
		got, _ := build(t, repoRoot, "-buildvcs=false")
		assert.Equal(t, built{dev, dev}, got)
	})

	t.Run("VCS stamp", func(t *testing.T) {
		if !checkout {
			t.Skip("not a git checkout")
		}
		got, bin := build(t, repoRoot, "-buildvcs=true")
		// What the go command recorded when it built: the revision, whether
		// the checkout had changes, and the module version (the release
		// only at a clean checkout of its tag). The work tree and HEAD may
		// change meanwhile, so they are read from the binary.
		version := exec.CommandContext(t.Context(), "go", "version", "-m", filepath.Join(bin, "kubepact"))
		version.Env = testenv.New(t, testenv.Options{Go: true})
		out, err := version.Output()
		require.NoError(t, err)
		stamp := map[string]string{}
		for _, l := range strings.Split(string(out), "\n") {
			f := strings.Fields(l)
			switch {
			case len(f) >= 3 && f[0] == "mod":
				stamp["mod"] = f[2]
			case len(f) == 2 && f[0] == "build":
				k, v, _ := strings.Cut(f[1], "=")
				stamp[k] = v
			}
		}
		require.Len(t, stamp["vcs.revision"], 40, "the build recorded the revision: %s", out)
		want := dev + "+" + stamp["vcs.revision"][:12]
		switch {
		case stamp["mod"] == File():
			want = File() // a clean checkout of the release's tag
		case stamp["vcs.modified"] == "true":
			want += ".dirty"
		}
		assert.Equal(t, built{want, want}, got)
	})

	t.Run("source tarball", func(t *testing.T) {
		if !checkout {
			// This is a tarball already: build it as it is.
			got, _ := build(t, repoRoot, "-buildvcs=auto")
			assert.Equal(t, built{dev, dev}, got)
			return
		}
		dir := t.TempDir()
		git := func(args ...string) []byte {
			cmd := exec.CommandContext(t.Context(), "git", args...)
			cmd.Dir = repoRoot
			cmd.Env = testenv.New(t, testenv.Options{Programs: []string{"git"}})
			out, err := cmd.Output()
			require.NoError(t, err, "git %s", strings.Join(args, " "))
			return out
		}
		if len(git("status", "--porcelain")) == 0 {
			// The tarball of the commit, as git archive makes it.
			tar := exec.CommandContext(t.Context(), "tar", "-x", "-C", dir)
			tar.Env = testenv.New(t, testenv.Options{Programs: []string{"tar"}})
			tar.Stdin = bytes.NewReader(git("archive", "--format=tar", "HEAD"))
			out, err := tar.CombinedOutput()
			require.NoError(t, err, "tar -x: %s", out)
		} else {
			// The work tree has changes: what git archive would pack of
			// it, every file git tracks or would track.
			list := git("ls-files", "-z", "--cached", "--others", "--exclude-standard")
			for _, name := range strings.Split(strings.TrimSuffix(string(list), "\x00"), "\x00") {
				copyFile(t, filepath.Join(repoRoot, name), filepath.Join(dir, name))
			}
		}
		_, err := os.Stat(filepath.Join(dir, ".git"))
		require.True(t, os.IsNotExist(err), "the tarball has no .git")
		got, _ := build(t, dir, "-buildvcs=auto")
		assert.Equal(t, built{dev, dev}, got)
	})
}

// copyFile copies src to dst, making dst's directory; a file listed but
// deleted from the work tree is skipped, as git archive of the work tree
// would leave it out.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if os.IsNotExist(err) {
		return
	}
	require.NoError(t, err)
	defer in.Close()
	require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
	out, err := os.Create(dst)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}
