// Package prevbuild builds kubepact-controller as an earlier commit of the
// repository had it, for the tests that upgrade from that version: the
// commit's source tree, extracted with git archive, and its binary, built
// from that tree. Both are kept in the user's cache directory, so that only
// the first run pays for the build.
//
// # Errors
//
// A commit the repository does not hold (a shallow clone, a commit not
// fetched) is a *MissingCommitError; a directory outside any git repository
// (a source archive) is ErrNoRepository. Both mean the tests need a full
// clone.
//
// # Concurrency
//
// Build may run in several processes at once: each extracts and builds
// beside the cache's entries and renames its result into place, so a
// reader never sees half a tree or half a binary.
package prevbuild

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kubepact/kubepact/internal/testenv"
)

// ErrNoRepository reports that the directory Build starts from is in no git
// repository, so no earlier commit can be had.
var ErrNoRepository = errors.New("prevbuild: not in a git repository")

// MissingCommitError reports that the repository does not hold Commit.
type MissingCommitError struct {
	// Commit is the commit asked for, as given.
	Commit string
	// Shallow is true when the repository is a shallow clone, which
	// explains the missing commit: fetch its history (git fetch
	// --unshallow).
	Shallow bool
}

func (e *MissingCommitError) Error() string {
	if e.Shallow {
		return fmt.Sprintf("prevbuild: commit %s is not in the repository, a shallow clone (git fetch --unshallow)", e.Commit)
	}
	return fmt.Sprintf("prevbuild: commit %s is not in the repository", e.Commit)
}

// Options are Build's optional settings. The zero value builds from the
// repository holding the working directory into the user's cache directory.
type Options struct {
	// Dir is a directory inside the repository; empty: the working
	// directory.
	Dir string
	// CacheDir holds the builds, each in prev-<full commit hash>; empty:
	// kubepact in os.UserCacheDir.
	CacheDir string
}

// Build returns the kubepact-controller binary of commit (any revision git
// resolves to a commit) and that commit's source tree, so that its config/
// can be rendered. The first call extracts the tree with git archive and
// builds ./cmd/kubepact-controller in it with the go command on the PATH,
// the module and build caches and settings `go env` reports, and no
// workspace; later calls find both in the cache. git, tar and go run in an
// environment of their own (see internal/testenv): a HOME of Build's, a
// PATH of only them.
func Build(ctx context.Context, commit string, opts *Options) (bin, tree string, err error) {
	if opts == nil {
		opts = &Options{}
	}
	dir := opts.Dir
	if dir == "" {
		dir = "."
	}
	home, err := os.MkdirTemp("", "prevbuild-home-")
	if err != nil {
		return "", "", fmt.Errorf("prevbuild: %w", err)
	}
	defer os.RemoveAll(home)
	env, err := testenv.Build(testenv.Options{Home: home, Programs: []string{"git", "tar"}, Go: true})
	if err != nil {
		return "", "", fmt.Errorf("prevbuild: %w", err)
	}
	git := func(ctx context.Context, dir string, args ...string) (string, error) {
		return runGit(ctx, env, dir, args...)
	}
	root, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", "", fmt.Errorf("%w: %s: %w", ErrNoRepository, dir, err)
	}
	full, err := git(ctx, root, "rev-parse", "--verify", "--quiet", commit+"^{commit}")
	if err != nil {
		shallow, serr := git(ctx, root, "rev-parse", "--is-shallow-repository")
		if serr != nil {
			return "", "", fmt.Errorf("prevbuild: %w", serr)
		}
		return "", "", &MissingCommitError{Commit: commit, Shallow: shallow == "true"}
	}
	cache := opts.CacheDir
	if cache == "" {
		user, err := os.UserCacheDir()
		if err != nil {
			return "", "", fmt.Errorf("prevbuild: %w", err)
		}
		cache = filepath.Join(user, "kubepact")
	}
	entry := filepath.Join(cache, "prev-"+full)
	tree, bin = filepath.Join(entry, "src"), filepath.Join(entry, "kubepact-controller")
	_, binErr := os.Stat(bin)
	_, treeErr := os.Stat(filepath.Join(tree, "go.mod"))
	if binErr == nil && treeErr == nil {
		return bin, tree, nil
	}
	if err := os.MkdirAll(entry, 0o755); err != nil {
		return "", "", fmt.Errorf("prevbuild: %w", err)
	}
	if treeErr != nil {
		if err := extract(ctx, env, root, full, entry, tree); err != nil {
			return "", "", err
		}
	}
	if err := build(ctx, env, full, tree, bin); err != nil {
		return "", "", err
	}
	return bin, tree, nil
}

// extract writes commit's tree, from git archive, to tree: extracted beside
// it in entry and then renamed, so that an interrupted run leaves no half
// tree under the name later runs trust. git and tar run with env.
func extract(ctx context.Context, env []string, root, commit, entry, tree string) error {
	tmp, err := os.MkdirTemp(entry, "src-")
	if err != nil {
		return fmt.Errorf("prevbuild: %w", err)
	}
	defer os.RemoveAll(tmp)
	archive := exec.CommandContext(ctx, "git", "-C", root, "archive", "--format=tar", commit)
	untar := exec.CommandContext(ctx, "tar", "-x", "-C", tmp)
	archive.Env, untar.Env = env, env
	var archiveErr, untarErr bytes.Buffer
	archive.Stderr, untar.Stderr = &archiveErr, &untarErr
	if untar.Stdin, err = archive.StdoutPipe(); err != nil {
		return fmt.Errorf("prevbuild: %w", err)
	}
	if err := untar.Start(); err != nil {
		return fmt.Errorf("prevbuild: tar: %w", err)
	}
	if err := archive.Run(); err != nil {
		_ = untar.Wait()
		return fmt.Errorf("prevbuild: git archive %s: %w: %s", commit, err, strings.TrimSpace(archiveErr.String()))
	}
	if err := untar.Wait(); err != nil {
		return fmt.Errorf("prevbuild: tar: %w: %s", err, strings.TrimSpace(untarErr.String()))
	}
	if err := os.RemoveAll(tree); err != nil {
		return fmt.Errorf("prevbuild: %w", err)
	}
	if err := os.Rename(tmp, tree); err != nil {
		return fmt.Errorf("prevbuild: %w", err)
	}
	return nil
}

// build builds ./cmd/kubepact-controller of tree into bin, through a file
// of this process's own that is renamed into place. go runs with env, no
// workspace, and flags of its own.
func build(ctx context.Context, env []string, commit, tree, bin string) error {
	partial := bin + ".partial-" + strconv.Itoa(os.Getpid())
	defer os.Remove(partial)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", partial, "./cmd/kubepact-controller")
	cmd.Dir = tree
	cmd.Env = append(env, "GOWORK=off", "GOFLAGS=-mod=readonly -buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("prevbuild: go build ./cmd/kubepact-controller of %s in %s: %w\n%s", commit, tree, err, out)
	}
	if err := os.Rename(partial, bin); err != nil {
		return fmt.Errorf("prevbuild: %w", err)
	}
	return nil
}

// runGit runs git in dir with env and returns its output without the
// trailing newline, or an error with what git wrote to its standard error.
func runGit(ctx context.Context, env []string, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
