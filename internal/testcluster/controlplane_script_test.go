package testcluster

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kubepact/kubepact/internal/testenv"
)

// TestBuildScriptReadsVersionsWhole: hack/controlplane.sh takes binaries
// that report the pinned versions as up to date even when they write
// their --version output in several pieces, the matching line first (as
// etcd does), so that a reader that stops at the match would cut them
// off. Fake binaries stand for the real ones, and a fake go that fails
// stands for a build the script must not start.
func TestBuildScriptReadsVersionsWhole(t *testing.T) {
	t.Parallel()
	script, err := findBuildScript()
	if err != nil {
		t.Fatal(err)
	}
	dir, tools := t.TempDir(), t.TempDir()
	// Each writes the line the script looks for, waits until any reader
	// that stops at the match is gone, then writes more.
	fake := func(name, first string) {
		body := "#!/bin/sh\n[ \"$1\" = --version ] || exit 2\necho '" + first + "'\nsleep 0.3\n" +
			"i=0\nwhile [ $i -lt 200 ]; do echo 'more output'; i=$((i+1)); done\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fake("kube-apiserver", "Kubernetes "+KubernetesVersion)
	fake("kube-controller-manager", "Kubernetes "+KubernetesVersion)
	fake("etcd", "etcd Version: "+strings.TrimPrefix(EtcdVersion, "v"))
	if err := os.WriteFile(filepath.Join(tools, "go"), []byte("#!/bin/sh\necho 'fake go: no build expected' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}

	// The script's environment, with the fake go first on PATH and sleep,
	// which the fakes run, after.
	env := testenv.New(t, testenv.Options{Dirs: []string{tools}, Programs: append(slices.Clone(scriptPrograms), "sleep"),
		Set: []string{BinDirEnv + "=" + dir}})
	cmd := exec.CommandContext(t.Context(), "bash", script)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s with binaries of the pinned versions: %v\n%s", script, err, stderr.String())
	}
	if got := strings.TrimSpace(stdout.String()); got != dir {
		t.Errorf("%s printed %q, want the directory %s", script, got, dir)
	}
	if !strings.Contains(stderr.String(), "binaries up to date") {
		t.Errorf("%s did not find the binaries up to date:\n%s", script, stderr.String())
	}

	// A binary of another version is not up to date: the script goes on
	// to build (and the fake go fails).
	fake("etcd", "etcd Version: 3.5.0")
	cmd = exec.CommandContext(t.Context(), "bash", script)
	cmd.Env = env
	stderr.Reset()
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		t.Errorf("%s took etcd 3.5.0 for %s", script, EtcdVersion)
	}
	if !strings.Contains(stderr.String(), "fake go: no build expected") {
		t.Errorf("%s did not try to build:\n%s", script, stderr.String())
	}
}

// TestScriptEnv: the environment EnsureBinaries runs hack/controlplane.sh
// in finds every program the script runs, go among them, with the test
// process's Go caches, and names the binaries' directory.
func TestScriptEnv(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env, err := scriptEnv(t.TempDir(), dir)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-c", `command -v "$@" >/dev/null && go env GOCACHE && echo "$` + BinDirEnv + `"`, "bash", "go"}, scriptPrograms...)
	cmd := exec.CommandContext(t.Context(), "bash", args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	gocache, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := string(gocache) + dir + "\n"; string(out) != want {
		t.Errorf("the script's environment: %q, want %q", out, want)
	}
}
