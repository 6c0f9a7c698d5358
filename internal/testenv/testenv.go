// Package testenv builds the environment of a program that a test runs
// (kubectl, helm, go, git, bash, a binary the test built) from nothing, so
// that the set-up of whoever runs the tests changes no result: their
// kubeconfig, their kubectl plugins and ~/.kube/cache, their Helm
// repositories, their shell's PATH.
//
// An environment holds:
//   - PATH: only the directories the test names and those of the programs
//     it names, looked up on the test process's PATH, in that order;
//   - HOME: a directory of the test's own, and under it the XDG base
//     directories (XDG_CONFIG_HOME, XDG_CACHE_HOME, XDG_DATA_HOME,
//     XDG_STATE_HOME), Helm's (HELM_CONFIG_HOME, HELM_CACHE_HOME,
//     HELM_DATA_HOME) and kubectl's cache (KUBECACHEDIR);
//   - KUBECONFIG: the file the test names, else ~/.kube/config of that
//     HOME, which does not exist unless the test writes it;
//   - TMPDIR: the test process's temporary directory;
//   - for a program that runs go, the go command's settings as `go env`
//     reports them to the test process (GOCACHE, GOMODCACHE, GOPATH, GOFLAGS,
//     GOPROXY, GOTOOLCHAIN, ...), so that a fresh HOME neither empties Go's
//     build and module caches nor drops a setting of the developer's go env
//     file; and go, and where they are installed git (which go runs to stamp
//     a build) and, with cgo, the C compilers, on PATH; Go's telemetry is
//     off in that HOME;
//   - last, the NAME=value pairs the test sets itself.
//
// Nothing else of the test process's environment is passed on.
package testenv

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Options says what an environment holds besides its fixed part. Its zero
// value, with a Home, is an environment with an empty PATH.
type Options struct {
	// Home is HOME. Build requires it; New makes one with t.TempDir when it
	// is empty.
	Home string
	// Kubeconfig is KUBECONFIG. Empty means Home's .kube/config.
	Kubeconfig string
	// Dirs come first on PATH, in order: a directory of binaries the test
	// built, say.
	Dirs []string
	// Programs are looked up on the test process's PATH (a name with a
	// separator is taken as a path); their directories follow Dirs on PATH.
	Programs []string
	// Go passes the go command's settings on and puts go, git and, when cgo
	// is on, the C compilers on PATH.
	Go bool
	// Set are NAME=value pairs added last, so they win over the rest.
	Set []string
}

// goSettings are the variables of `go env` passed on to a program that runs
// go: where its caches are, where modules come from and how they are
// checked, which toolchain and flags it uses, and cgo.
var goSettings = []string{
	"GOCACHE", "GOMODCACHE", "GOPATH", "GOFLAGS", "GOPROXY", "GONOPROXY", "GOPRIVATE",
	"GOSUMDB", "GONOSUMDB", "GOINSECURE", "GOVCS", "GOAUTH", "GOTOOLCHAIN",
	"CGO_ENABLED", "CC", "CXX",
}

// Build returns the environment o describes, as exec.Cmd.Env takes it, or
// an error when o has no Home, a program is not on the PATH or `go env`
// fails.
func Build(o Options) ([]string, error) {
	if o.Home == "" {
		return nil, fmt.Errorf("testenv: no Home")
	}
	home := o.Home
	kubeconfig := o.Kubeconfig
	if kubeconfig == "" {
		kubeconfig = filepath.Join(home, ".kube", "config")
	}
	env := []string{
		"HOME=" + home,
		"KUBECONFIG=" + kubeconfig,
		"KUBECACHEDIR=" + filepath.Join(home, ".kube", "cache"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"HELM_CONFIG_HOME=" + filepath.Join(home, ".config", "helm"),
		"HELM_CACHE_HOME=" + filepath.Join(home, ".cache", "helm"),
		"HELM_DATA_HOME=" + filepath.Join(home, ".local", "share", "helm"),
		"TMPDIR=" + os.TempDir(),
	}
	programs := slices.Clone(o.Programs)
	if o.Go {
		settings, err := goEnv()
		if err != nil {
			return nil, err
		}
		if err := telemetryOff(home); err != nil {
			return nil, err
		}
		programs = append(programs, "go")
		// go runs git to stamp a build, and with cgo the C compilers: one
		// that is missing fails only what needs it, with go's own message.
		helpers := []string{"git"}
		if settings["CGO_ENABLED"] == "1" {
			for _, cc := range []string{settings["CC"], settings["CXX"]} {
				if f := strings.Fields(cc); len(f) > 0 {
					helpers = append(helpers, f[0])
				}
			}
		}
		for _, h := range helpers {
			if _, err := programDir(h); err == nil {
				programs = append(programs, h)
			}
		}
		for _, k := range goSettings {
			env = append(env, k+"="+settings[k])
		}
	}
	path := slices.Clone(o.Dirs)
	for _, p := range programs {
		dir, err := programDir(p)
		if err != nil {
			return nil, err
		}
		path = append(path, dir)
	}
	env = append(env, "PATH="+strings.Join(unique(path), string(os.PathListSeparator)))
	return append(env, o.Set...), nil
}

// New is Build for a test: Home is a directory of t's when o leaves it
// empty, and an error fails t.
func New(t testing.TB, o Options) []string {
	t.Helper()
	if o.Home == "" {
		o.Home = t.TempDir()
	}
	env, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// telemetryOff turns Go's telemetry off in home, as `go telemetry off`
// would: in its default mode go leaves a process behind that keeps writing
// counters in home after go exits, while the test removes it.
func telemetryOff(home string) error {
	dir := filepath.Join(home, ".config", "go", "telemetry")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mode"), []byte("off"), 0o644); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	return nil
}

// programDir returns the directory that holds program on the test
// process's PATH.
func programDir(program string) (string, error) {
	path := program
	if !strings.ContainsRune(program, filepath.Separator) {
		var err error
		if path, err = exec.LookPath(program); err != nil {
			return "", fmt.Errorf("testenv: %s must be on the PATH: %w", program, err)
		}
	}
	abs, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return "", fmt.Errorf("testenv: %w", err)
	}
	return abs, nil
}

// goEnv returns goSettings as `go env` reports them in the test process's
// environment.
func goEnv() (map[string]string, error) {
	cmd := exec.Command("go", append([]string{"env", "-json"}, goSettings...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("testenv: go env: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	settings := map[string]string{}
	if err := json.Unmarshal(out, &settings); err != nil {
		return nil, fmt.Errorf("testenv: go env -json: %w", err)
	}
	return settings, nil
}

// unique returns dirs without repeats and empty entries, in order.
func unique(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if d != "" && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}
