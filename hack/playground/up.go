//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubepact/kubepact/internal/testcluster"
	"github.com/kubepact/kubepact/internal/testenv"
)

const (
	// controllerName names the Deployment, its ServiceAccount and the controller's process.
	controllerName = "kubepact-controller"
	// tokenLifetime is how long the controllers' ServiceAccount tokens last.
	tokenLifetime = 24 * time.Hour
	// readyTimeout bounds the wait for a controller's /readyz.
	readyTimeout = 3 * time.Minute
)

// progress prints each step with the time since up began.
type progress struct{ begin time.Time }

func (p progress) step(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%5.1fs] %s\n", time.Since(p.begin).Seconds(), fmt.Sprintf(format, args...))
}

// up starts the playground in dir, or says it is already up. On a failure it stops what it
// started and removes dir.
func up(ctx context.Context, dir string) (err error) {
	if st, err := load(dir); err == nil {
		if !st.Up {
			return fmt.Errorf("%s holds a playground that an up is starting, or that one left half-started: wait, or run down", dir)
		}
		for _, p := range st.processes() {
			if !p.alive() {
				return fmt.Errorf("%s holds a playground that is partly down (%s/%s, pid %d, is gone): run down, then up", dir, p.Cluster, p.Name, p.PID)
			}
		}
		fmt.Printf("already up (state in %s)\n", dir)
		st.printCommands()
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("%s exists but holds no playground state: remove it, or pick another --state-dir", dir)
	}
	repo, err := repoRoot()
	if err != nil {
		return err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return err
	}
	pr := progress{begin: time.Now()}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	st := &state{dir: dir, CLI: filepath.Join(dir, "bin", "kubepact")}
	defer func() {
		if err != nil {
			pr.step("failed: stopping what started and removing %s", dir)
			stopAll(st.processes())
			_ = os.RemoveAll(dir)
		}
	}()
	if err := st.save(); err != nil {
		return err
	}

	pr.step("control-plane binaries %s (etcd %s): using those in %s, or building them there (5-7 minutes, once); building kubepact and kubepact-controller",
		testcluster.KubernetesVersion, testcluster.EtcdVersion, testcluster.DefaultBinDir())
	var binDir string
	var binErr, buildErr error
	var wg sync.WaitGroup
	wg.Go(func() { binDir, binErr = testcluster.EnsureBinaries(ctx) })
	wg.Go(func() { buildErr = goBuild(ctx, repo, filepath.Join(dir, "bin")) })
	wg.Wait()
	if err := errors.Join(binErr, buildErr); err != nil {
		return err
	}

	pr.step("starting the provider and consumer clusters")
	clusters, err := testcluster.StartAllWith(ctx, testcluster.Options{Detach: true, ParentDir: dir, NoPeerRoles: true}, "provider", "consumer")
	if err != nil {
		return err
	}
	for _, c := range clusters {
		if err := st.addCluster(c, binDir); err != nil {
			return errors.Join(err, testcluster.StopAll(clusters))
		}
	}
	if err := st.save(); err != nil {
		return err
	}

	manifests, from, err := render(ctx, repo, dir)
	if err != nil {
		return err
	}
	pr.step("installing kubepact into both clusters from %s", from)
	errs := make([]error, len(clusters))
	for i, c := range clusters {
		wg.Go(func() { errs[i] = install(ctx, c, &st.Clusters[i], manifests, dir) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}

	pr.step("starting both controllers as %s/%s, waiting for /readyz", manifests.namespace, controllerName)
	var mu sync.Mutex // guards st
	for i, c := range clusters {
		wg.Go(func() {
			p, err := runController(ctx, c, manifests, filepath.Join(dir, c.Name()), filepath.Join(dir, "bin", controllerName))
			if p != nil {
				mu.Lock()
				st.Clusters[i].Processes = append(st.Clusters[i].Processes, *p)
				errs[i] = st.save()
				mu.Unlock()
			}
			errs[i] = errors.Join(err, errs[i])
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}

	st.Up = true
	if err := st.save(); err != nil {
		return err
	}
	pr.step("up in %s; running until down:", time.Since(pr.begin).Round(100*time.Millisecond))
	for _, p := range st.processes() {
		fmt.Fprintf(os.Stderr, "          %-33s pid %-7d log %s\n", p.Cluster+"/"+p.Name, p.PID, p.Log)
	}
	fmt.Fprintf(os.Stderr, "          (the Deployments stay unready: these clusters run no Pods)\n")
	st.printCommands()
	return nil
}

// repoRoot returns the kubepact repository that holds the working directory.
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if mod, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(mod, []byte("module github.com/kubepact/kubepact\n")) {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("run it inside the kubepact repository (not found above %s)", wd)
		}
	}
}

// goBuild builds the CLI and the controller with the caller's go and its settings, static and
// with -trimpath as the image is (so a fresh clone elsewhere finds the compiled packages in Go's
// build cache), into a cache directory, where go links them again only when they changed, and
// copies them into bin, so that a later build never writes a binary that runs.
func goBuild(ctx context.Context, repo, bin string) error {
	cache, err := os.UserCacheDir()
	if err != nil {
		return err
	}
	cache = filepath.Join(cache, "kubepact", "playground", "bin")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", cache+string(filepath.Separator), "./cmd/kubepact", "./cmd/"+controllerName)
	cmd.Dir, cmd.Env = repo, append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/kubepact ./cmd/%s: %w", controllerName, err)
	}
	if err := os.MkdirAll(bin, 0o700); err != nil {
		return err
	}
	for _, name := range []string{"kubepact", controllerName} {
		if err := copyFile(filepath.Join(cache, name), filepath.Join(bin, name)); err != nil {
			return err
		}
	}
	return nil
}

// copyFile copies the executable src to dst.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o700)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// addCluster records c's admin kubeconfig and processes.
func (st *state) addCluster(c *testcluster.Cluster, binDir string) error {
	kubeconfig := filepath.Join(st.dir, c.Name()+".kubeconfig")
	if err := os.WriteFile(kubeconfig, c.AdminKubeconfig(), 0o600); err != nil {
		return err
	}
	rec := cluster{Name: c.Name(), Kubeconfig: kubeconfig}
	pids := c.PIDs()
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		exe, err := filepath.EvalSymlinks(filepath.Join(binDir, name))
		if err != nil {
			return err
		}
		rec.Processes = append(rec.Processes, process{Name: name, PID: pids[name], Exe: exe, Log: filepath.Join(c.Dir(), name+".log")})
	}
	st.Clusters = append(st.Clusters, rec)
	return nil
}

// manifests are kubepact's objects, rendered once for both clusters.
type manifests struct {
	path      string // the rendered YAML
	namespace string // the Deployment's
	args      []string
	env       []corev1.EnvVar
	createdNS bool // whether the manifests create the namespace (config/ does, the chart does not)
}

// render renders charts/kubepact with helm template when helm is on the PATH, else config/
// with kubectl kustomize, into dir, and reads the Deployment's args and env.
func render(ctx context.Context, repo, dir string) (*manifests, string, error) {
	tool, args, from := "kubectl", []string{"kustomize", filepath.Join(repo, "config")}, "config/ (kubectl kustomize; helm is not on the PATH)"
	if _, err := exec.LookPath("helm"); err == nil {
		tool, args, from = "helm", []string{"template", "kubepact", filepath.Join(repo, "charts", "kubepact"), "-n", "kubepact-system", "--include-crds"}, "charts/kubepact (helm template)"
	}
	out, err := run(ctx, dir, tool, args...)
	if err != nil {
		return nil, "", err
	}
	m := &manifests{path: filepath.Join(dir, "kubepact.yaml")}
	if err := os.WriteFile(m.path, out, 0o600); err != nil {
		return nil, "", err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	var found bool
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, "", fmt.Errorf("reading what %s renders: %w", tool, err)
		}
		switch obj["kind"] {
		case "Namespace":
			m.createdNS = true
		case "Deployment":
			var d appsv1.Deployment
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &d); err != nil {
				return nil, "", err
			}
			for _, c := range d.Spec.Template.Spec.Containers {
				if d.Name == controllerName && c.Name == "controller" {
					m.namespace, m.args, m.env, found = d.Namespace, c.Args, c.Env, true
				}
			}
		}
	}
	if !found {
		return nil, "", fmt.Errorf("%s renders no Deployment %s with a container named controller", tool, controllerName)
	}
	return m, from, nil
}

// run runs a program of the PATH (kubectl, helm) in an environment of its own, with a HOME
// under dir, and returns its output.
func run(ctx context.Context, dir string, program string, args ...string) ([]byte, error) {
	env, err := testenv.Build(testenv.Options{Home: filepath.Join(dir, "home"), Programs: []string{program}})
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, program, args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w\n%s", program, strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// install applies the manifests to c as its admin, and writes the kubeconfig the controller
// runs with: a token of its ServiceAccount.
func install(ctx context.Context, c *testcluster.Cluster, rec *cluster, m *manifests, dir string) error {
	admin, err := kubernetes.NewForConfig(c.AdminConfig())
	if err != nil {
		return err
	}
	if !m.createdNS { // as helm install --create-namespace does
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: m.namespace}}
		if _, err := admin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("%s: creating namespace %s: %w", c.Name(), m.namespace, err)
		}
	}
	if _, err := run(ctx, dir, "kubectl", "--kubeconfig", rec.Kubeconfig, "apply", "-f", m.path); err != nil {
		return fmt.Errorf("%s: %w", c.Name(), err)
	}
	expiry := int64(tokenLifetime.Seconds())
	token, err := admin.CoreV1().ServiceAccounts(m.namespace).CreateToken(ctx, controllerName,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("%s: a token for ServiceAccount %s/%s: %w", c.Name(), m.namespace, controllerName, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[c.Name()] = &clientcmdapi.Cluster{Server: c.Host(), CertificateAuthorityData: c.CA()}
	cfg.AuthInfos[controllerName] = &clientcmdapi.AuthInfo{Token: token.Status.Token}
	cfg.Contexts[c.Name()] = &clientcmdapi.Context{Cluster: c.Name(), AuthInfo: controllerName, Namespace: m.namespace}
	cfg.CurrentContext = c.Name()
	if err := os.MkdirAll(filepath.Join(dir, c.Name()), 0o700); err != nil {
		return err
	}
	return clientcmd.WriteToFile(*cfg, filepath.Join(dir, c.Name(), "controller.kubeconfig"))
}

// runController starts bin on c as the Deployment runs it, with the token install wrote, in a
// session of its own that outlives up, and waits for its /readyz. It returns the process as soon
// as it started, with an error if it does not become ready.
func runController(ctx context.Context, c *testcluster.Cluster, m *manifests, dir, bin string) (*process, error) {
	probe, err := freeAddr()
	if err != nil {
		return nil, err
	}
	metrics, err := freeAddr()
	if err != nil {
		return nil, err
	}
	var args []string
	for _, a := range m.args {
		switch {
		case strings.HasPrefix(a, "--metrics-bind-address="):
			a = "--metrics-bind-address=" + metrics
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			a = "--health-probe-bind-address=" + probe
		}
		args = append(args, a)
	}
	// These clusters publish no kube-public/cluster-info: say where consumers reach this one.
	args = append(args, "--api-server-url="+c.Host())
	// The downward API's values, for a Pod that does not exist.
	var set []string
	for _, e := range m.env {
		switch {
		case e.ValueFrom == nil:
			set = append(set, e.Name+"="+e.Value)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			set = append(set, e.Name+"="+m.namespace)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			set = append(set, e.Name+"="+controllerName+"-playground")
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.uid":
			set = append(set, e.Name+"="+string(uuid.NewUUID()))
		default:
			return nil, fmt.Errorf("the Deployment's env %s comes from where the playground cannot follow", e.Name)
		}
	}
	env, err := testenv.Build(testenv.Options{Home: filepath.Join(dir, "home"), Kubeconfig: filepath.Join(dir, "controller.kubeconfig"), Set: set})
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "controller.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exe, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return nil, err
	}
	p := &process{Name: controllerName, PID: cmd.Process.Pid, Exe: exe, Log: logPath}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+probe+"/readyz", nil)
		if err != nil {
			return p, err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		select {
		case err := <-exited:
			return p, fmt.Errorf("%s: %s exited (%v); see %s", c.Name(), controllerName, err, logPath)
		case <-ctx.Done():
			return p, fmt.Errorf("%s: %s not ready: %w; see %s and http://%s/readyz", c.Name(), controllerName, ctx.Err(), logPath, probe)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}
