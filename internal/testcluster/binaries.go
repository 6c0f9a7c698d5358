package testcluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/kubepact/kubepact/internal/testenv"
)

// Versions of the control-plane components, as built by hack/controlplane.sh.
const (
	KubernetesVersion = "v1.35.4"
	EtcdVersion       = "v3.6.5"
)

// BinDirEnv names the environment variable that overrides the directory of the control-plane
// binaries. hack/controlplane.sh honours it too.
const BinDirEnv = "KUBEPACT_CONTROLPLANE_DIR"

// binaries are the executables a cluster needs, all in one directory.
var binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager"}

// buildScript is the repository-relative path of the script that builds the binaries.
const buildScript = "hack/controlplane.sh"

// scriptPrograms are the programs buildScript runs besides go (and what go runs): its PATH holds
// their directories and nothing else of the test process's.
var scriptPrograms = []string{"bash", "cat", "cp", "flock", "grep", "mkdir", "mktemp", "mv", "rm"}

// scriptEnv is the environment buildScript runs in, with home as HOME and the binaries' directory
// dir: built from nothing (see internal/testenv), with go's settings.
func scriptEnv(home, dir string) ([]string, error) {
	return testenv.Build(testenv.Options{Home: home, Programs: scriptPrograms, Go: true, Set: []string{BinDirEnv + "=" + dir}})
}

// DefaultBinDir returns the directory that holds the control-plane binaries: $KUBEPACT_CONTROLPLANE_DIR
// if set, else $HOME/.cache/kubepact/controlplane/<KubernetesVersion>, the default of
// hack/controlplane.sh.
func DefaultBinDir() string {
	if dir := os.Getenv(BinDirEnv); dir != "" {
		return dir
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "kubepact", "controlplane", KubernetesVersion)
}

// checkBinaries reports which of the binaries are missing from dir, or not executable.
func checkBinaries(dir string) error {
	var missing []string
	for _, name := range binaries {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil || !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("control-plane binaries %s missing from %s; build them with %s or call EnsureBinaries",
			strings.Join(missing, ", "), dir, buildScript)
	}
	return nil
}

// ensureMu keeps the tests of one process from running the build script more than once at a
// time; the script itself locks against other processes.
var ensureMu sync.Mutex

// EnsureBinaries makes sure the control-plane binaries are in DefaultBinDir and returns that
// directory. When any is missing it runs hack/controlplane.sh, found by walking up from this
// package's source directory or from the working directory to the repository root. A cold build
// takes several minutes (see the script); when the binaries are present it only checks that they
// exist. The script's progress goes to os.Stderr.
func EnsureBinaries(ctx context.Context) (string, error) {
	dir := DefaultBinDir()
	if checkBinaries(dir) == nil {
		return dir, nil
	}
	ensureMu.Lock()
	defer ensureMu.Unlock()
	if checkBinaries(dir) == nil {
		return dir, nil
	}

	script, err := findBuildScript()
	if err != nil {
		return "", err
	}
	home, err := os.MkdirTemp("", "kubepact-controlplane-home-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(home)
	env, err := scriptEnv(home, dir)
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Env = env
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = scriptProcAttr()
	cmd.Cancel = func() error { return terminateGroup(cmd) }
	cmd.WaitDelay = 30 * time.Second
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("building control-plane binaries with %s: %w", script, err)
	}
	if err := checkBinaries(dir); err != nil {
		return "", fmt.Errorf("%s succeeded (output %q) but: %w", script, bytes.TrimSpace(out), err)
	}
	return dir, nil
}

// findBuildScript locates hack/controlplane.sh in the repository that contains this package's
// source, or else the working directory (the package directory while `go test` runs).
func findBuildScript() (string, error) {
	var starts []string
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		starts = append(starts, filepath.Dir(file))
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, start := range starts {
		for dir := start; ; dir = filepath.Dir(dir) {
			script := filepath.Join(dir, buildScript)
			if fileExists(filepath.Join(dir, "go.mod")) && fileExists(script) {
				return script, nil
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	return "", fmt.Errorf("cannot find %s above %s", buildScript, strings.Join(starts, " or "))
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
