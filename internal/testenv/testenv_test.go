package testenv_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/internal/testenv"
)

// hostileKubeconfig is a kubeconfig whose current context names a cluster
// no test has: a program that reads it says so.
const hostileKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: developers-cluster
  cluster: {server: "https://developers-cluster.invalid:6443"}
users:
- name: developer
  user: {token: not-a-token}
contexts:
- name: developers-context
  context: {cluster: developers-cluster, user: developer}
current-context: developers-context
`

// hostile gives the test process a developer's set-up that a test must not
// see: kubectl plugins (one named as the plugin a test builds) first on
// PATH, KUBECONFIG naming a kubeconfig, a HOME with another kubeconfig and
// Helm repositories, XDG and Helm directories of its own. Go's settings are
// kept as they were, set explicitly, as a developer whose HOME changed
// would keep them. It returns the directory of the plugins and the HOME.
func hostile(t *testing.T) (plugins, home string) {
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	require.NoError(t, err)
	goSettings := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, goSettings, 3)

	plugins, home = t.TempDir(), t.TempDir()
	for _, name := range []string{"kubectl-foo", "kubectl-kubepact"} {
		require.NoError(t, os.WriteFile(filepath.Join(plugins, name), []byte("#!/bin/sh\necho hostile\n"), 0o755))
	}
	for name, data := range map[string]string{
		".kube/config":                   hostileKubeconfig,
		"developer.kubeconfig":           hostileKubeconfig,
		".config/helm/repositories.yaml": "apiVersion: \"\"\nrepositories:\n- name: developers\n  url: https://charts.invalid\n",
		".kube/cache/discovery/marker":   "hostile",
		"helm-config/repositories.yaml":  "repositories: [{name: developers, url: https://charts.invalid}]\n",
		"xdg-config/go/env":              "GOFLAGS=-tags=developers_go_env\n",
	} {
		p := filepath.Join(home, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	}
	t.Setenv("PATH", plugins+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("KUBECONFIG", filepath.Join(home, "developer.kubeconfig"))
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "xdg-config"))
	t.Setenv("HELM_CONFIG_HOME", filepath.Join(home, "helm-config"))
	t.Setenv("KUBECACHEDIR", filepath.Join(home, ".kube", "cache"))
	t.Setenv("GOCACHE", goSettings[0])
	t.Setenv("GOMODCACHE", goSettings[1])
	t.Setenv("GOPATH", goSettings[2])
	return plugins, home
}

// get returns the value of name in env, the last one as exec.Cmd takes it.
func get(env []string, name string) (string, bool) {
	value, ok := "", false
	for _, kv := range env {
		if k, v, found := strings.Cut(kv, "="); found && k == name {
			value, ok = v, true
		}
	}
	return value, ok
}

// TestNewLeavesOutTheDevelopersSetUp: none of a developer's set-up reaches
// the environment New builds, not even its directories; PATH holds only
// what the test named; KUBECONFIG, HOME, the XDG and Helm directories are
// the test's own.
func TestNewLeavesOutTheDevelopersSetUp(t *testing.T) {
	plugins, hostileHome := hostile(t)
	sh, err := exec.LookPath("sh")
	require.NoError(t, err)
	built := t.TempDir()
	home := t.TempDir()
	env := testenv.New(t, testenv.Options{Home: home, Dirs: []string{built}, Programs: []string{"sh"}})

	for _, kv := range env {
		assert.NotContains(t, kv, plugins, "a developer's PATH entry")
		assert.NotContains(t, kv, hostileHome, "a developer's HOME, kubeconfig or Helm and XDG directories")
	}
	want := map[string]string{
		"PATH":             built + string(os.PathListSeparator) + filepath.Dir(sh),
		"HOME":             home,
		"KUBECONFIG":       filepath.Join(home, ".kube", "config"),
		"KUBECACHEDIR":     filepath.Join(home, ".kube", "cache"),
		"XDG_CONFIG_HOME":  filepath.Join(home, ".config"),
		"XDG_CACHE_HOME":   filepath.Join(home, ".cache"),
		"XDG_DATA_HOME":    filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME":   filepath.Join(home, ".local", "state"),
		"HELM_CONFIG_HOME": filepath.Join(home, ".config", "helm"),
		"HELM_CACHE_HOME":  filepath.Join(home, ".cache", "helm"),
		"HELM_DATA_HOME":   filepath.Join(home, ".local", "share", "helm"),
		"TMPDIR":           os.TempDir(),
	}
	got := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
	}
	assert.Equal(t, want, got, "exactly these, nothing else of the test process's environment")

	// A program sees no plugin of the developer's.
	cmd := exec.Command("sh", "-c", `command -v kubectl-foo kubectl-kubepact || echo none`)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "none\n", string(out))

	// An explicit kubeconfig, and a setting of the test's, win.
	env = testenv.New(t, testenv.Options{Kubeconfig: "/nonexistent/kubeconfig", Set: []string{"HOME=/elsewhere"}})
	v, _ := get(env, "KUBECONFIG")
	assert.Equal(t, "/nonexistent/kubeconfig", v)
	v, _ = get(env, "HOME")
	assert.Equal(t, "/elsewhere", v)
	v, _ = get(env, "PATH")
	assert.Empty(t, v, "no program named, no directory on PATH")
}

// TestNewKubectl: kubectl run in the environment New builds lists only the
// plugin the test put on PATH, with no warning that a developer's plugin of
// the same name overshadows it, and reads no kubeconfig of the developer's.
func TestNewKubectl(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not on the PATH")
	}
	plugins, _ := hostile(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kubectl-kubepact"), []byte("#!/bin/sh\necho under test\n"), 0o755))
	var env []string
	kubectl := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("kubectl", args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "kubectl %s: %s", strings.Join(args, " "), out)
		return string(out)
	}
	// In the test process's own environment, with the plugin under test put
	// first on PATH as this package's callers once did, the developer's
	// set-up shows.
	env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	assert.Equal(t, "developers-context\n", kubectl("config", "get-contexts", "-o", "name"), "the set-up this test hides")
	cmd := exec.Command("kubectl", "plugin", "list")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "kubectl plugin list with a developer's kubectl-kubepact behind the one under test:\n%s", out)
	assert.Contains(t, string(out), "overshadowed", "the failure of issue 40")

	env = testenv.New(t, testenv.Options{Dirs: []string{dir}, Programs: []string{"kubectl"}})
	list := kubectl("plugin", "list")
	assert.Contains(t, list, filepath.Join(dir, "kubectl-kubepact"))
	assert.NotContains(t, list, plugins)
	assert.NotContains(t, list, "kubectl-foo")
	assert.NotContains(t, list, "overshadowed")
	assert.Equal(t, "under test\n", kubectl("kubepact"))
	assert.Empty(t, kubectl("config", "get-contexts", "-o", "name"), "no developer's context")
}

// TestNewGo: go run in the environment New builds has the settings go has
// in the test process, its caches and those of the developer's go env file
// (which the new HOME does not hold) among them.
func TestNewGo(t *testing.T) {
	plugins, hostileHome := hostile(t)
	goEnv := func(env []string) string {
		t.Helper()
		cmd := exec.Command("go", "env", "-json", "GOCACHE", "GOMODCACHE", "GOPATH", "GOFLAGS", "GOPROXY", "GOTOOLCHAIN")
		cmd.Env = env
		out, err := cmd.Output()
		require.NoError(t, err)
		return string(out)
	}
	want := goEnv(nil)
	require.Contains(t, want, "-tags=developers_go_env", "the developer's go env file")
	env := testenv.New(t, testenv.Options{Go: true})
	for _, kv := range env {
		assert.NotContains(t, kv, plugins)
	}
	got := goEnv(env)
	assert.Equal(t, want, got, "go's settings, as the test process's go reports them")
	assert.NotContains(t, got, hostileHome, "GOCACHE, GOMODCACHE and GOPATH are the developer's, as set")
}
